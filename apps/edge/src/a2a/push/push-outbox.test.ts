import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../../logging.js';
import { MemoryPushStore } from '../test-support/memory-push-store.js';
import type { PushDeliveryResult, PushMetrics } from './push-metrics.js';
import { PushOutbox, pushBackoffMs } from './push-outbox.js';
import type { PushAttemptResult, PushRequest } from './push-sender.js';
import { PushTargetError, type PushTargetCheck } from './push-target.js';

const allowAll: PushTargetCheck = (url) => Promise.resolve({ url: new URL(url), address: undefined });

function counting(): PushMetrics & { counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  return {
    counts,
    delivery: (result: PushDeliveryResult) => {
      counts[result] = (counts[result] ?? 0) + 1;
    },
  };
}

/** Lets the outbox's promise chains run after a timer fired. */
async function settle(): Promise<void> {
  for (let index = 0; index < 10; index += 1) await Promise.resolve();
}

function setup(results: PushAttemptResult[], check: PushTargetCheck = allowAll) {
  const clock = new ManualClock();
  const store = new MemoryPushStore();
  const metrics = counting();
  const attempts: { at: number; request: PushRequest }[] = [];
  const outbox = new PushOutbox({
    store,
    clock,
    check,
    send: (request) => {
      attempts.push({ at: clock.now(), request });
      return Promise.resolve(results.shift() ?? { kind: 'delivered', status: 200 });
    },
    metrics,
    logger: silentLogger,
    maxAttempts: 4,
    retryWindowMs: 60_000,
  });
  store.enqueue(
    [
      {
        principal: 'k1',
        taskId: 't1',
        configId: 'c1',
        url: 'https://hooks.example/a',
        token: 'tok',
        contentType: 'application/json',
        body: '{"id":"t1"}',
      },
    ],
    clock.now(),
    true,
  );
  return { clock, store, metrics, attempts, outbox };
}

describe('PushOutbox', () => {
  it('doubles the wait after each failed attempt, up to five minutes', () => {
    expect([1, 2, 3, 4].map(pushBackoffMs)).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(pushBackoffMs(30)).toBe(300_000);
  });

  it('delivers a queued notification at once and removes it', async () => {
    const { clock, store, metrics, attempts, outbox } = setup([]);
    outbox.start();
    clock.advance(0);
    await settle();
    expect(attempts).toHaveLength(1);
    expect(attempts[0]?.request).toMatchObject({ token: 'tok', body: '{"id":"t1"}' });
    expect(store.queued).toBe(0);
    expect(metrics.counts).toEqual({ delivered: 1 });
    await outbox.stop();
  });

  it('retries with exponential backoff on the clock until delivered', async () => {
    const { clock, store, metrics, attempts, outbox } = setup([
      { kind: 'retry', reason: 'HTTP 503' },
      { kind: 'retry', reason: 'HTTP 503' },
    ]);
    const start = clock.now();
    outbox.start();
    clock.advance(0);
    await settle();
    clock.advance(999);
    await settle();
    expect(attempts).toHaveLength(1);
    clock.advance(1);
    await settle();
    expect(attempts).toHaveLength(2);
    clock.advance(2_000);
    await settle();
    expect(attempts.map((attempt) => attempt.at - start)).toEqual([0, 1_000, 3_000]);
    expect(store.queued).toBe(0);
    expect(metrics.counts).toEqual({ retried: 2, delivered: 1 });
    await outbox.stop();
  });

  it('gives up after max attempts', async () => {
    const failing = Array.from({ length: 10 }, () => ({ kind: 'retry' as const, reason: 'down' }));
    const { clock, store, metrics, attempts, outbox } = setup(failing);
    outbox.start();
    for (let step = 0; step < 10; step += 1) {
      clock.advance(10_000);
      await settle();
    }
    expect(attempts).toHaveLength(4);
    expect(store.queued).toBe(0);
    expect(metrics.counts).toEqual({ retried: 3, failed: 1 });
    await outbox.stop();
  });

  it('does not retry what the webhook refused, and counts a target the check now refuses', async () => {
    const rejected = setup([{ kind: 'rejected', reason: 'HTTP 404' }]);
    rejected.outbox.start();
    rejected.clock.advance(0);
    await settle();
    expect(rejected.metrics.counts).toEqual({ failed: 1 });
    expect(rejected.store.queued).toBe(0);
    await rejected.outbox.stop();

    const refused = setup([], () => Promise.reject(new PushTargetError('blocked_address', 'now private')));
    refused.outbox.start();
    refused.clock.advance(0);
    await settle();
    expect(refused.attempts).toHaveLength(0);
    expect(refused.metrics.counts).toEqual({ refused: 1 });
    expect(refused.store.queued).toBe(0);
    await refused.outbox.stop();
  });

  it('sets no timer while the only due notification is in flight, and goes on when it ends', async () => {
    const { clock, store, outbox } = setup([]);
    let release: (result: PushAttemptResult) => void = () => undefined;
    const slow = new PushOutbox({
      store,
      clock,
      check: allowAll,
      send: () =>
        new Promise((resolve) => {
          release = resolve;
        }),
      metrics: counting(),
      logger: silentLogger,
      maxAttempts: 4,
      retryWindowMs: 60_000,
    });
    await outbox.stop();
    slow.start();
    clock.advance(0);
    await settle();
    expect(clock.pending).toBe(0);
    release({ kind: 'retry', reason: 'HTTP 503' });
    await settle();
    expect(clock.pendingDelays()).toEqual([1_000]);
    await slow.stop();
  });

  it('keeps what is queued when stopped, for the next start', async () => {
    const { clock, store, attempts, outbox } = setup([]);
    await outbox.stop();
    clock.advance(10_000);
    await settle();
    expect(attempts).toHaveLength(0);
    expect(store.queued).toBe(1);
  });
});
