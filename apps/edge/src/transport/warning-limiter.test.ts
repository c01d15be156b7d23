import { systemClock } from '../clock.js';
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import { limitWarnings, WarningLimiter } from './warning-limiter.js';

describe('WarningLimiter', () => {
  it('allows perWindow lines per address per window and reports how many were dropped', () => {
    let now = 0;
    const limiter = new WarningLimiter({
      perWindow: 2,
      windowMs: 1000,
      clock: { ...systemClock, now: () => now },
    });
    expect(limiter.take('a')).toEqual({ allowed: true, suppressed: 0 });
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
    expect(limiter.take('a').allowed).toBe(false);
    expect(limiter.take('b').allowed).toBe(true);
    now = 1000;
    expect(limiter.take('a')).toEqual({ allowed: true, suppressed: 2 });
  });

  it('keeps at most maxAddresses entries', () => {
    const limiter = new WarningLimiter({ maxAddresses: 3 });
    for (let index = 0; index < 100; index += 1) limiter.take(`10.0.0.${index}`);
    expect(limiter.size).toBe(3);
  });

  it('limitWarnings writes suppressed warnings at debug, also through children', () => {
    const lines: string[] = [];
    const base = {
      ...silentLogger,
      warn: (_fields: Record<string, unknown>, message: string) => lines.push(`warn ${message}`),
      debug: (_fields: Record<string, unknown>, message: string) => lines.push(`debug ${message}`),
    };
    base.child = () => base;
    const logger = limitWarnings(base, new WarningLimiter({ perWindow: 1 }), '10.0.0.1');
    logger.warn({}, 'one');
    logger.child({ x: 1 }).warn({}, 'two');
    expect(lines).toEqual(['warn one', 'debug two']);
  });
});
