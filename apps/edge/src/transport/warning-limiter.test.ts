import { systemClock } from '../clock.js';
import { describe, expect, it } from '@jest/globals';
import { silentLogger, type Logger } from '../logging.js';
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

  it('limitWarnings children write their bindings as fields of each line, without children of the logger', () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const record =
      (level: string) =>
      (fields: Record<string, unknown>, message: string): void => {
        lines.push({ level, fields, message });
      };
    let children = 0;
    const base: Logger = {
      debug: record('debug'),
      info: record('info'),
      warn: record('warn'),
      error: record('error'),
      child: () => {
        children += 1;
        return base;
      },
    };
    const logger = limitWarnings(base, new WarningLimiter({ perWindow: 1 }), '10.0.0.1');
    const connection = logger.child({ remoteAddress: '10.0.0.1:5000' });
    const node = connection.child({ nodeId: 'n1' });
    node.info({ revision: 'r1' }, 'node registered');
    node.warn({ nodeId: 'field wins' }, 'first warning');
    connection.warn({}, 'second warning');
    connection.error({ code: 'x' }, 'failed');
    logger.debug({}, 'plain');
    expect(children).toBe(0);
    expect(lines).toEqual([
      {
        level: 'info',
        fields: { remoteAddress: '10.0.0.1:5000', nodeId: 'n1', revision: 'r1' },
        message: 'node registered',
      },
      {
        level: 'warn',
        fields: { remoteAddress: '10.0.0.1:5000', nodeId: 'field wins' },
        message: 'first warning',
      },
      { level: 'debug', fields: { remoteAddress: '10.0.0.1:5000' }, message: 'second warning' },
      { level: 'error', fields: { remoteAddress: '10.0.0.1:5000', code: 'x' }, message: 'failed' },
      { level: 'debug', fields: {}, message: 'plain' },
    ]);
  });
});
