import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { ServiceError } from '../service/errors.js';
import { PROVIDER_WAIT_GRACE_MS, startWhenProviderConnects } from './provider-wait.js';

async function settle(): Promise<void> {
  for (let turn = 0; turn < 10; turn += 1) await Promise.resolve();
}

describe('startWhenProviderConnects', () => {
  it('retries a no-provider refusal with backoff on the clock until a provider takes the run', async () => {
    const clock = new ManualClock();
    const attempts: number[] = [];
    const started = startWhenProviderConnects(
      () => {
        attempts.push(clock.now());
        if (attempts.length < 4) return Promise.reject(new ServiceError('no_provider_available', 'none yet'));
        return Promise.resolve('run');
      },
      { clock, signal: new AbortController().signal, untilMs: clock.now() + PROVIDER_WAIT_GRACE_MS },
    );
    for (let step = 0; step < 40; step += 1) {
      await settle();
      clock.advance(50);
    }
    await expect(started).resolves.toBe('run');
    const start = attempts[0] ?? 0;
    expect(attempts.map((at) => at - start)).toEqual([0, 250, 750, 1750]);
  });

  it('gives up at untilMs with the last refusal, and does not retry other refusals', async () => {
    const clock = new ManualClock();
    let attempts = 0;
    const waiting = startWhenProviderConnects(
      () => {
        attempts += 1;
        return Promise.reject(new ServiceError('no_nodes', 'no node connected'));
      },
      { clock, signal: new AbortController().signal, untilMs: clock.now() + 3_000 },
    );
    for (let step = 0; step < 80; step += 1) {
      await settle();
      clock.advance(50);
    }
    await expect(waiting).rejects.toMatchObject({ code: 'no_nodes' });
    expect(attempts).toBeGreaterThan(2);
    expect(attempts).toBeLessThan(8);

    let other = 0;
    await expect(
      startWhenProviderConnects(
        () => {
          other += 1;
          return Promise.reject(new ServiceError('rate_limited', 'slow down'));
        },
        { clock, signal: new AbortController().signal, untilMs: clock.now() + 3_000 },
      ),
    ).rejects.toMatchObject({ code: 'rate_limited' });
    expect(other).toBe(1);
  });

  it('stops waiting at once when its signal aborts', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    let attempts = 0;
    const waiting = startWhenProviderConnects(
      () => {
        attempts += 1;
        return Promise.reject(new ServiceError('no_provider_available', 'none'));
      },
      { clock, signal: controller.signal, untilMs: clock.now() + PROVIDER_WAIT_GRACE_MS },
    );
    await settle();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'no_provider_available' });
    expect(attempts).toBe(1);
    expect(clock.pending).toBe(0);
  });
});
