import { describe, expect, it } from '@jest/globals';
import { createLoginThrottle } from './login-throttle.js';

function clockAt(start: number) {
  const clock = { at: start, now: () => clock.at };
  return clock;
}

describe('login throttle', () => {
  it('locks one address after perAddress failures for the rest of the window; others may still try', () => {
    const clock = clockAt(0);
    const throttle = createLoginThrottle(clock, { perAddress: 2, global: 10, windowMs: 60_000 });
    throttle.failed('10.0.0.1');
    clock.at = 1_000;
    expect(throttle.retryAfterMs('10.0.0.1')).toBe(0);
    throttle.failed('10.0.0.1');
    expect(throttle.retryAfterMs('10.0.0.1')).toBe(59_000);
    expect(throttle.retryAfterMs('10.0.0.2')).toBe(0);
    clock.at = 59_999;
    expect(throttle.retryAfterMs('10.0.0.1')).toBe(1);
    // The first failure left the window: one is left, below the limit.
    clock.at = 60_000;
    expect(throttle.retryAfterMs('10.0.0.1')).toBe(0);
  });

  it('locks every address once the edge-wide failures reach global (a guess spread over many addresses)', () => {
    const clock = clockAt(0);
    const throttle = createLoginThrottle(clock, { perAddress: 5, global: 3, windowMs: 10_000 });
    for (const address of ['a', 'b', 'c']) throttle.failed(address);
    expect(throttle.retryAfterMs('fresh')).toBe(10_000);
    clock.at = 10_000;
    expect(throttle.retryAfterMs('fresh')).toBe(0);
  });

  it('forgets an address on success and tracks at most maxAddresses', () => {
    const clock = clockAt(0);
    const throttle = createLoginThrottle(clock, {
      perAddress: 1,
      global: 1_000,
      windowMs: 60_000,
      maxAddresses: 3,
    });
    throttle.failed('a');
    expect(throttle.retryAfterMs('a')).toBeGreaterThan(0);
    throttle.succeeded('a');
    expect(throttle.retryAfterMs('a')).toBe(0);
    for (let index = 0; index < 10; index += 1) throttle.failed(`addr-${index}`);
    expect(throttle.trackedAddresses).toBe(3);
    expect(throttle.retryAfterMs('addr-9')).toBeGreaterThan(0);
  });
});
