import { describe, expect, it } from '@jest/globals';
import { repeat, sleep, systemClock } from './clock.js';
import { ManualClock } from './manual-clock.js';

describe('systemClock', () => {
  it('unrefs its timers unless one asks to keep the process alive', () => {
    const plain = systemClock.setTimeout(() => undefined, 60_000) as NodeJS.Timeout;
    const kept = systemClock.setTimeout(() => undefined, 60_000, { keepAlive: true }) as NodeJS.Timeout;
    try {
      expect(plain.hasRef()).toBe(false);
      expect(kept.hasRef()).toBe(true);
    } finally {
      systemClock.clearTimeout(plain);
      systemClock.clearTimeout(kept);
    }
  });

  it('fires a timer, and ignores clearing a fired or missing one', async () => {
    const fired = await new Promise<boolean>((resolve) => {
      const timer = systemClock.setTimeout(() => resolve(true), 5, { keepAlive: true });
      expect(timer).toBeDefined();
    });
    expect(fired).toBe(true);
    expect(() => systemClock.clearTimeout(undefined)).not.toThrow();
  });

  it('re-arms a timer on refresh: due its full delay after the refresh', async () => {
    const started = performance.now();
    let firedAt = 0;
    const fired = new Promise<void>((resolve) => {
      const timer = systemClock.setTimeout(
        () => {
          firedAt = performance.now();
          resolve();
        },
        40,
        { keepAlive: true },
      );
      systemClock.setTimeout(() => timer.refresh(), 30, { keepAlive: true });
    });
    await fired;
    // Refreshed at ~30 ms for 40 ms more: ~70 ms, not the original 40.
    expect(firedAt - started).toBeGreaterThanOrEqual(65);
  });

  it('reads a monotonic time with sub-millisecond precision', () => {
    const first = systemClock.monotonicNow?.() ?? Number.NaN;
    const second = systemClock.monotonicNow?.() ?? Number.NaN;
    expect(second).toBeGreaterThanOrEqual(first);
    expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(1000);
  });
});

describe('sleep', () => {
  it('resolves when its time has passed on the clock, passing the timer options on', async () => {
    const clock = new ManualClock();
    let done = false;
    const waiting = sleep(clock, 1000, new AbortController().signal, { keepAlive: true }).then(
      () => (done = true),
    );
    expect(clock.keepAliveDelays()).toEqual([1000]);
    clock.advance(999);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(1);
    await waiting;
    expect(done).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('resolves at once on abort and leaves no timer behind', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const waiting = sleep(clock, 60_000, controller.signal);
    expect(clock.pending).toBe(1);
    controller.abort();
    await waiting;
    expect(clock.pending).toBe(0);
  });

  it('does not set a timer when the signal has already aborted', async () => {
    const clock = new ManualClock();
    await sleep(clock, 1000, AbortSignal.abort());
    expect(clock.pending).toBe(0);
  });
});

describe('repeat', () => {
  it('calls its work once per interval on one timer until stopped', () => {
    const clock = new ManualClock(0);
    const calls: number[] = [];
    const stop = repeat(clock, 100, () => calls.push(clock.now()));
    clock.advance(350);
    expect(calls).toEqual([100, 200, 300]);
    expect(clock.pending).toBe(1);
    stop();
    clock.advance(1000);
    expect(calls).toEqual([100, 200, 300]);
    expect(clock.pending).toBe(0);
  });

  it('stops for good when the work itself stops it', () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const stop = repeat(clock, 10, () => {
      calls += 1;
      if (calls === 2) stop();
    });
    clock.advance(100);
    expect(calls).toBe(2);
    expect(clock.pending).toBe(0);
  });
});
