import { describe, expect, it } from '@jest/globals';
import { GovernanceError } from './errors.js';
import { createGovernor, periodAt, type Admission, type RunEnd } from './governor.js';
import { testPrincipal as key } from './test-support/test-principal.js';
import { ManualClock } from '@iop/clock';
import type { UsageRecord } from './usage-store.js';

function setup(spentOnDisk: Record<string, number> = {}) {
  const clock = new ManualClock();
  const records: UsageRecord[] = [];
  const refused: string[] = [];
  const governor = createGovernor({
    clock,
    sink: { record: (record) => records.push(record) },
    spent: { tokensSince: (principal) => spentOnDisk[principal] ?? 0 },
    onRefused: (principal, error) => refused.push(`${principal}:${error.code}`),
  });
  return { clock, governor, records, refused };
}

function end(inputTokens: number, outputTokens: number): RunEnd {
  return {
    runId: 'r',
    outcome: 'completed',
    usage: { inputTokens, outputTokens },
    provider: 'p',
    node: 'n',
    queueMs: 1,
    durationMs: 2,
    parentRunId: '',
    childTokens: 0,
  };
}

function refusal(run: () => unknown): GovernanceError {
  try {
    run();
  } catch (error) {
    if (error instanceof GovernanceError) return error;
    throw error;
  }
  throw new Error('expected a GovernanceError');
}

describe('governor', () => {
  it('refuses a model outside the allow-list as model_not_allowed', () => {
    const { governor } = setup();
    const principal = key({ models: ['model-a'] });
    governor.admit({ principal, surface: 'openai', model: 'model-a', estimatedTokens: 1 }).finish(end(1, 1));
    const error = refusal(() =>
      governor.admit({ principal, surface: 'openai', model: 'model-b', estimatedTokens: 1 }),
    );
    expect(error.code).toBe('model_not_allowed');
  });

  it('rpm 5: the 6th request in a minute is rate_limited with the wait until the oldest leaves', () => {
    const { governor, clock, refused } = setup();
    const principal = key({ rpm: 5 });
    for (let index = 0; index < 5; index += 1) {
      governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 0 }).finish(end(0, 0));
      clock.advance(1000);
    }
    const error = refusal(() =>
      governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 0 }),
    );
    expect(error).toMatchObject({ code: 'rate_limited', limit: 'rpm', retryAfterSeconds: 55 });
    expect(refused).toEqual(['team-a:rate_limited']);
    clock.advance(55_000);
    expect(() =>
      governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 0 }),
    ).not.toThrow();
  });

  it('max_concurrent 1: a second run waits for the first to finish, and finish is counted once', () => {
    const { governor } = setup();
    const principal = key({ max_concurrent: 1 });
    const first = governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 0 });
    expect(
      refusal(() => governor.admit({ principal, surface: 'a2a', model: 'm', estimatedTokens: 0 })).code,
    ).toBe('concurrency_limited');
    first.finish(end(0, 0));
    first.finish(end(0, 0));
    const second = governor.admit({ principal, surface: 'a2a', model: 'm', estimatedTokens: 0 });
    expect(governor.snapshot()[0]?.inFlight).toBe(1);
    second.finish(end(0, 0));
    expect(governor.snapshot()[0]?.inFlight).toBe(0);
  });

  it('tpm counts the reported tokens (estimate corrected at the end)', () => {
    const { governor, clock } = setup();
    const principal = key({ tpm: 100 });
    const run = governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 10 });
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(10);
    run.finish(end(60, 50));
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(110);
    const error = refusal(() =>
      governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 1 }),
    );
    expect(error).toMatchObject({ code: 'rate_limited', limit: 'tpm', retryAfterSeconds: 60 });
    clock.advance(60_000);
    governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 1 }).finish(end(1, 0));
  });

  it('a 100-token budget refuses once the reported usage passes it, until the next period', () => {
    const { governor, clock } = setup();
    const principal = key({ token_budget: { tokens: 100, per: 'day' } });
    governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 5 }).finish(end(40, 30));
    governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 5 }).finish(end(20, 20));
    const error = refusal(() =>
      governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 5 }),
    );
    expect(error.code).toBe('budget_exhausted');
    // Noon UTC: the day's budget returns at midnight, 12 hours later.
    expect(error.retryAfterSeconds).toBe(12 * 3600);
    clock.advance(12 * 3600 * 1000);
    governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 5 }).finish(end(1, 1));
  });

  it('reads what the period already spent from the store (budgets survive restarts)', () => {
    const { governor } = setup({ 'team-a': 100 });
    const principal = key({ token_budget: { tokens: 100, per: 'month' } });
    expect(
      refusal(() => governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 0 })).code,
    ).toBe('budget_exhausted');
  });

  it('runs in flight reserve their estimate against the budget', () => {
    const { governor } = setup({ 'team-a': 90 });
    const principal = key({ token_budget: { tokens: 100, per: 'day' } });
    const running: Admission = governor.admit({
      principal,
      surface: 'openai',
      model: 'm',
      estimatedTokens: 10,
    });
    expect(
      refusal(() => governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 1 })).code,
    ).toBe('budget_exhausted');
    running.finish(end(2, 3));
    governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 1 }).finish(end(0, 0));
  });

  it('records every finished run once, anonymous runs included, without limiting them', () => {
    const { governor, records } = setup();
    const anonymous = governor.admit({
      principal: undefined,
      surface: 'console',
      model: 't',
      estimatedTokens: 3,
    });
    anonymous.finish(end(7, 8));
    anonymous.finish(end(7, 8));
    expect(records).toEqual([
      expect.objectContaining({
        principal: '',
        surface: 'console',
        model: 't',
        inputTokens: 7,
        outputTokens: 8,
        outcome: 'completed',
      }),
    ]);
  });

  it('computes UTC day and month periods', () => {
    const at = Date.UTC(2026, 1, 28, 23, 59);
    expect(periodAt(at, 'day')).toEqual({ startMs: Date.UTC(2026, 1, 28), endMs: Date.UTC(2026, 2, 1) });
    expect(periodAt(at, 'month')).toEqual({ startMs: Date.UTC(2026, 1, 1), endMs: Date.UTC(2026, 2, 1) });
  });

  it('reserve takes only the limits (no usage record); the lease returns the slot and corrects the tokens', () => {
    const { governor, records, clock } = setup();
    const principal = key({ max_concurrent: 1, tpm: 100 });
    const lease = governor.reserve(principal, 60);
    expect(refusal(() => governor.reserve(principal, 1)).limit).toBe('max_concurrent');
    lease.finish(10);
    lease.finish(10);
    expect(records).toEqual([]);
    expect(governor.snapshot()).toEqual([
      {
        principal: 'team-a',
        inFlight: 0,
        requestsLastMinute: 1,
        tokensLastMinute: 10,
        budgetSpent: undefined,
      },
    ]);
    clock.advance(1000);
    governor.reserve(principal, 1).finish(1);
  });

  it('a principal carrying a lease (limits taken on its home edge) is not counted here, only recorded', () => {
    const home = setup();
    const here = setup();
    const principal = key({ max_concurrent: 1, models: ['model-a'] });
    const lease = home.governor.reserve(principal, 5);
    const admission = here.governor.admit({
      principal: { ...principal, lease },
      surface: 'openai',
      model: 'model-a',
      estimatedTokens: 5,
    });
    // Counted on the home edge only: here, the same key is still free.
    expect(here.governor.snapshot()).toEqual([]);
    expect(refusal(() => home.governor.reserve(principal, 1)).limit).toBe('max_concurrent');
    // The allow-list is still checked where the run is admitted.
    expect(
      refusal(() =>
        here.governor.admit({
          principal: { ...principal, lease },
          surface: 'openai',
          model: 'x',
          estimatedTokens: 1,
        }),
      ).code,
    ).toBe('model_not_allowed');
    admission.finish(end(3, 4));
    expect(here.records).toMatchObject([{ principal: 'team-a', inputTokens: 3, outputTokens: 4 }]);
    expect(home.governor.snapshot()[0]).toMatchObject({ inFlight: 0, tokensLastMinute: 7 });
  });

  it('reserving prompt + max_tokens: concurrent runs pass a 60-token budget by at most one answer, settled at the end', () => {
    const { governor } = setup();
    const principal = key({ token_budget: { tokens: 60, per: 'day' } });
    // Each request: a 1-token prompt and max_tokens 20 (admissionTokens) = 21 reserved.
    const admit = () => governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 21 });
    const running: Admission[] = [];
    for (let index = 0; index < 10; index += 1) {
      try {
        running.push(admit());
      } catch (error) {
        expect(error).toMatchObject({ code: 'budget_exhausted' });
      }
    }
    // 0, 21 and 42 reserved were below 60; at 63 the fourth is refused: the overshoot is under one answer.
    expect(running).toHaveLength(3);
    // Two finish early having delivered 6 tokens each; one uses all 21: the reservations settle to 33 spent.
    running[0]?.finish(end(1, 5));
    running[1]?.finish(end(1, 5));
    expect(governor.snapshot()[0]?.budgetSpent).toBe(12);
    // 12 spent + 21 still reserved < 60: there is room again, and the 4th admission takes it.
    running.push(admit());
    running[2]?.finish(end(1, 20));
    running[3]?.finish(end(1, 20));
    expect(governor.snapshot()[0]).toMatchObject({ budgetSpent: 54, inFlight: 0 });
    running.push(admit());
    running[4]?.finish(end(1, 20));
    expect(refusal(admit).code).toBe('budget_exhausted');
    expect(governor.snapshot()[0]?.budgetSpent).toBe(75);
  });

  it('reserving against tpm: concurrent runs cannot take more than one answer past it, and the window settles', () => {
    const { governor, clock } = setup();
    const principal = key({ tpm: 100 });
    const admit = () => governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 40 });
    const first = admit();
    const second = admit();
    const third = admit();
    expect(refusal(admit)).toMatchObject({ code: 'rate_limited', limit: 'tpm' });
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(120);
    // Cut short: each delivered 5 tokens; tpm counts those, not the reservation.
    for (const run of [first, second, third]) run.finish(end(2, 3));
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(15);
    expect(() => admit().finish(end(1, 1))).not.toThrow();
    clock.advance(61_000);
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(0);
  });

  it('a run longer than the tpm window counts its tokens when it ends, not in a second that left the window', () => {
    const { governor, clock } = setup();
    const principal = key({ tpm: 1000 });
    const long = governor.admit({ principal, surface: 'openai', model: 'm', estimatedTokens: 100 });
    clock.advance(90_000);
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(0);
    long.finish(end(10, 290));
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(300);
    clock.advance(61_000);
    expect(governor.snapshot()[0]?.tokensLastMinute).toBe(0);
  });
});
