import { describe, expect, it } from '@jest/globals';
import type { Clock } from '../clock.js';
import { encodeRunKey, type RemoteRuns, type RunKey, type RunUpdate } from '../placement/run-directory.js';
import { RunRegistryError } from '../run-registry-error.js';
import { RunRegistry } from './run-registry.js';

function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return {
    now: () => now,
    setTimeout: () => ({ refresh: () => undefined }),
    clearTimeout: () => undefined,
    advance: (ms) => {
      now += ms;
    },
  };
}

const key = (id: string, principal = ''): RunKey => ({ principal, kind: 'openai.response', id });

async function collect(updates: AsyncIterable<RunUpdate>): Promise<RunUpdate[]> {
  const seen: RunUpdate[] = [];
  for await (const update of updates) seen.push(update);
  return seen;
}

describe('encodeRunKey', () => {
  it('keeps keys apart however principal and id are spelled', () => {
    const a = encodeRunKey({ principal: 'team', kind: 'a2a.task', id: 'a-x' });
    const b = encodeRunKey({ principal: 'team-a', kind: 'a2a.task', id: 'x' });
    const c = encodeRunKey({ principal: 'team","a2a.task', kind: 'a2a.task', id: 'x' });
    expect(new Set([a, b, c]).size).toBe(3);
    expect(encodeRunKey({ principal: '', kind: 'openai.response', id: 'x' })).not.toBe(
      encodeRunKey({ principal: '', kind: 'a2a.task', id: 'x' }),
    );
  });
});

describe('RunRegistry', () => {
  it('answers get and cancel only for the principal that registered the run', async () => {
    const clock = fakeClock();
    const registry = new RunRegistry({ clock });
    const reasons: string[] = [];
    registry.add(key('r1', 'team'), { status: 'queued' }, (reason) => {
      reasons.push(reason);
    });
    expect(await registry.get(key('r1', 'team'))).toEqual({ state: { status: 'queued' }, ended: false });
    // team-a, anonymous and the same id of another kind are all misses, exactly like an unknown id.
    expect(await registry.get(key('r1', 'team-a'))).toBeUndefined();
    expect(await registry.get(key('r1'))).toBeUndefined();
    expect(await registry.get({ principal: 'team', kind: 'a2a.task', id: 'r1' })).toBeUndefined();
    expect(await registry.get(key('nope', 'team'))).toBeUndefined();
    expect(await registry.cancel(key('r1', 'team-a'), 'x')).toBeUndefined();
    expect(registry.subscribeLocal(key('r1', 'team-a'), new AbortController().signal)).toBeUndefined();
    expect(await registry.delete(key('r1', 'team-a'))).toBe(false);
    expect(reasons).toEqual([]);

    const cancelled = await registry.cancel(key('r1', 'team'), 'by the caller');
    expect(cancelled).toEqual({ view: { state: { status: 'queued' }, ended: false }, alreadyEnded: false });
    expect(reasons).toEqual(['by the caller']);
  });

  it('calls the cancel handle once, and not for an ended run', async () => {
    const registry = new RunRegistry({ clock: fakeClock() });
    let calls = 0;
    const run = registry.add(key('r1'), 's0', () => {
      calls += 1;
      run.end('cancelled');
    });
    const [first, second] = await Promise.all([
      registry.cancel(key('r1'), 'a'),
      registry.cancel(key('r1'), 'b'),
    ]);
    expect(calls).toBe(1);
    expect(first?.view).toEqual({ state: 'cancelled', ended: true });
    expect(second?.view.ended).toBe(true);
    expect(await registry.cancel(key('r1'), 'c')).toEqual({
      view: { state: 'cancelled', ended: true },
      alreadyEnded: true,
    });
    expect(calls).toBe(1);
  });

  it('evicts the oldest ended run first when full, and refuses when every run is going', () => {
    const registry = new RunRegistry({
      clock: fakeClock(),
      bounds: { 'openai.response': { maxEntries: 3, ttlMs: 60_000 } },
    });
    const r1 = registry.add(key('r1'), 1, () => undefined);
    registry.add(key('r2'), 2, () => undefined);
    const r3 = registry.add(key('r3'), 3, () => undefined);
    r3.end('done3');
    r1.end('done1');
    registry.add(key('r4'), 4, () => undefined);
    // r1 was added first: it is the oldest ended one and goes; r3 (ended) stays.
    expect(registry.getLocal(key('r1'))).toBeUndefined();
    expect(registry.getLocal(key('r3'))).toEqual({ state: 'done3', ended: true });
    registry.add(key('r5'), 5, () => undefined);
    expect(registry.getLocal(key('r3'))).toBeUndefined();
    expect(registry.size('openai.response')).toBe(3);
    expect(() => registry.add(key('r6'), 6, () => undefined)).toThrow(
      expect.objectContaining({ code: 'registry_full' }),
    );
    // Another kind has bounds of its own.
    registry.add({ principal: '', kind: 'a2a.task', id: 'r6' }, 6, () => undefined);
    expect(registry.size()).toBe(4);
  });

  it('forgets an ended run after its TTL, never a running one', () => {
    const clock = fakeClock();
    const registry = new RunRegistry({
      clock,
      bounds: { 'openai.response': { maxEntries: 10, ttlMs: 1000 } },
    });
    const ended = registry.add(key('ended'), 'a', () => undefined);
    registry.add(key('going'), 'b', () => undefined);
    clock.advance(5000);
    ended.end('done');
    clock.advance(999);
    expect(registry.getLocal(key('ended'))?.ended).toBe(true);
    clock.advance(1);
    expect(registry.getLocal(key('ended'))).toBeUndefined();
    expect(registry.getLocal(key('going'))).toEqual({ state: 'b', ended: false });
    expect(registry.size()).toBe(1);
  });

  it('refuses a duplicate key and answers copies of the state', () => {
    const registry = new RunRegistry({ clock: fakeClock() });
    registry.add(key('r1'), { n: 1 }, () => undefined);
    expect(() => registry.add(key('r1'), {}, () => undefined)).toThrow(RunRegistryError);
    const seen = registry.getLocal(key('r1'))?.state as { n: number };
    seen.n = 2;
    expect(registry.getLocal(key('r1'))?.state).toEqual({ n: 1 });
  });

  it('streams the state then every event until the run ends; an ended run gives its state only', async () => {
    const registry = new RunRegistry({ clock: fakeClock() });
    const run = registry.add(key('r1'), 'working', () => undefined);
    const updates = await registry.subscribe(key('r1'), new AbortController().signal);
    if (!updates) throw new Error('no subscription');
    const done = collect(updates);
    await Promise.resolve();
    run.emit('e1');
    run.emit('e2');
    run.end('completed');
    run.emit('late');
    expect(await done).toEqual([{ state: 'working' }, { event: 'e1' }, { event: 'e2' }]);
    const after = registry.subscribeLocal(key('r1'), new AbortController().signal);
    if (!after) throw new Error('no subscription');
    expect(await collect(after)).toEqual([{ state: 'completed' }]);
  });

  it('bounds subscriptions: count per run, and a reader that falls behind gets subscriber_too_slow', async () => {
    const registry = new RunRegistry({ clock: fakeClock(), maxSubscribers: 1, maxQueued: 2 });
    const run = registry.add(key('r1'), 's', () => undefined);
    const controller = new AbortController();
    const updates = registry.subscribeLocal(key('r1'), controller.signal);
    if (!updates) throw new Error('no subscription');
    const iterator = updates[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { state: 's' } });
    expect(() => registry.subscribeLocal(key('r1'), new AbortController().signal)).toThrow(
      expect.objectContaining({ code: 'too_many_subscribers' }),
    );
    for (const event of ['a', 'b', 'c', 'd']) run.emit(event);
    expect(await iterator.next()).toEqual({ done: false, value: { event: 'a' } });
    expect(await iterator.next()).toEqual({ done: false, value: { event: 'b' } });
    await expect(iterator.next()).rejects.toMatchObject({ code: 'subscriber_too_slow' });
    // The slow reader's place is free again.
    const again = registry.subscribeLocal(key('r1'), controller.signal);
    expect(again).toBeDefined();
  });

  it('ends a subscription when its signal aborts and frees its place', async () => {
    const registry = new RunRegistry({ clock: fakeClock(), maxSubscribers: 1 });
    registry.add(key('r1'), 's', () => undefined);
    const controller = new AbortController();
    const updates = registry.subscribeLocal(key('r1'), controller.signal);
    if (!updates) throw new Error('no subscription');
    const done = collect(updates);
    await Promise.resolve();
    controller.abort();
    expect(await done).toEqual([{ state: 's' }]);
    expect(registry.subscribeLocal(key('r1'), new AbortController().signal)).toBeDefined();
  });

  it('asks the other edges only when this edge does not hold the key', async () => {
    const asked: string[] = [];
    const remote: RemoteRuns = {
      get: (k) => {
        asked.push(`get ${encodeRunKey(k)}`);
        return Promise.resolve(k.id === 'far' ? { state: 'remote', ended: true } : undefined);
      },
      cancel: (k, reason) => {
        asked.push(`cancel ${k.id} ${reason}`);
        return Promise.resolve(undefined);
      },
      subscribe: (k) => {
        asked.push(`subscribe ${k.id}`);
        return Promise.resolve(undefined);
      },
      delete: (k) => {
        asked.push(`delete ${k.id}`);
        return Promise.resolve(false);
      },
    };
    const registry = new RunRegistry({ clock: fakeClock(), remote });
    registry.add(key('near', 'team'), 'here', () => undefined);
    expect(await registry.get(key('near', 'team'))).toEqual({ state: 'here', ended: false });
    expect(asked).toEqual([]);
    expect(await registry.get(key('far', 'team'))).toEqual({ state: 'remote', ended: true });
    // Another principal's local run is a local miss: the fabric is asked with that principal, and answers none.
    expect(await registry.get(key('near', 'team-a'))).toBeUndefined();
    expect(await registry.cancel(key('gone'), 'why')).toBeUndefined();
    expect(await registry.subscribe(key('gone'), new AbortController().signal)).toBeUndefined();
    expect(await registry.delete(key('gone'))).toBe(false);
    expect(asked).toEqual([
      `get ${encodeRunKey(key('far', 'team'))}`,
      `get ${encodeRunKey(key('near', 'team-a'))}`,
      'cancel gone why',
      'subscribe gone',
      'delete gone',
    ]);
  });

  it('close cancels every run still going and refuses new ones; delete cancels and forgets', async () => {
    const registry = new RunRegistry({ clock: fakeClock() });
    const reasons: string[] = [];
    const ended = registry.add(key('ended'), 'x', () => {
      reasons.push('ended');
    });
    ended.end('done');
    registry.add(key('going'), 'y', (reason) => {
      reasons.push(`going ${reason}`);
    });
    registry.add(key('deleted'), 'z', (reason) => {
      reasons.push(`deleted ${reason}`);
    });
    expect(await registry.delete(key('deleted'))).toBe(true);
    expect(registry.getLocal(key('deleted'))).toBeUndefined();
    await registry.close();
    expect(reasons).toEqual(['deleted run deleted', 'going edge shutting down']);
    expect(() => registry.add(key('new'), 'n', () => undefined)).toThrow(
      expect.objectContaining({ code: 'shutting_down' }),
    );
  });
});
