import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { parseResponseResume, remainingDeadlineMs } from './response-resume.js';

describe('remainingDeadlineMs', () => {
  it('counts the deadline from the original submission', () => {
    const clock = new ManualClock();
    const submittedAtMs = clock.now();
    clock.advance(12_000);
    expect(remainingDeadlineMs(30_000, submittedAtMs, clock.now())).toBe(18_000);
    clock.advance(18_000);
    expect(remainingDeadlineMs(30_000, submittedAtMs, clock.now())).toBe(0);
    clock.advance(1);
    expect(remainingDeadlineMs(30_000, submittedAtMs, clock.now())).toBe(-1);
  });

  it('has no deadline without a timeout, and never more than the timeout (a clock set back)', () => {
    expect(remainingDeadlineMs(undefined, 0, 50_000)).toBeUndefined();
    expect(remainingDeadlineMs(30_000, 10_000, 5_000)).toBe(30_000);
  });
});

describe('parseResponseResume', () => {
  const good = { v: 1, submittedAtMs: 5, request: { model: 'm', input: 'x' }, traceparent: 't' };

  it('reads a payload of its version', () => {
    expect(parseResponseResume(good)).toEqual(good);
    expect(parseResponseResume({ ...good, parent: { runId: 'r', nodeId: 'n' } })).toBeDefined();
  });

  it('refuses another version or a malformed payload', () => {
    for (const bad of [
      undefined,
      null,
      'text',
      { ...good, v: 2 },
      { ...good, submittedAtMs: 'soon' },
      { ...good, request: null },
      { ...good, request: [] },
      { ...good, traceparent: 7 },
      { ...good, parent: { runId: 'r' } },
    ]) {
      expect(parseResponseResume(bad)).toBeUndefined();
    }
  });
});
