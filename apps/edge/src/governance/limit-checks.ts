// Admission: whether a principal's limits let one more run in at `now`, from its counters — max_concurrent (a
// child run is not counted: its parent holds the slot), rpm, tpm, and the token budget (what was reported plus
// what runs in flight reserved). Each check answers the refusal to throw, or undefined; nothing is taken here
// (limit-accounting.ts takes what an admitted run uses).
import { GovernanceError } from './errors.js';
import type { Principal } from './principal.js';
import type { BudgetPeriod, PrincipalCounters } from './principal-counters.js';

/** The refusal of max_concurrent, rpm or tpm for one more run, or undefined when they let it in. */
export function rateRefusal(
  principal: Principal,
  counters: PrincipalCounters,
  now: number,
  child: boolean,
): GovernanceError | undefined {
  if (!child && principal.maxConcurrent !== null && counters.inFlight >= principal.maxConcurrent) {
    return new GovernanceError(
      'concurrency_limited',
      'max_concurrent',
      `key '${principal.id}' already has ${counters.inFlight} run(s) in flight (max_concurrent ${principal.maxConcurrent})`,
      1,
    );
  }
  if (principal.rpm !== null) {
    const waitMs = counters.requests.waitMs(now, principal.rpm, 1);
    if (waitMs > 0) {
      return new GovernanceError(
        'rate_limited',
        'rpm',
        `key '${principal.id}' is over its limit of ${principal.rpm} requests per minute`,
        seconds(waitMs),
      );
    }
  }
  if (principal.tpm !== null) {
    const used = counters.tokens.total(now);
    if (used >= principal.tpm) {
      return new GovernanceError(
        'rate_limited',
        'tpm',
        `key '${principal.id}' is over its limit of ${principal.tpm} tokens per minute`,
        seconds(counters.tokens.waitMs(now, principal.tpm - 1, 0)),
      );
    }
  }
  return undefined;
}

/** The refusal of an exhausted budget (retry when its period ends), or undefined. */
export function budgetRefusal(
  principal: Principal,
  budget: BudgetPeriod | undefined,
  now: number,
): GovernanceError | undefined {
  if (budget && principal.tokenBudget && budget.spent + budget.reserved >= principal.tokenBudget.tokens) {
    return new GovernanceError(
      'budget_exhausted',
      'token_budget',
      `key '${principal.id}' has used its budget of ${principal.tokenBudget.tokens} tokens per ${principal.tokenBudget.per}`,
      seconds(budget.endMs - now),
    );
  }
  return undefined;
}

/** Retry-after seconds: at least one. */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
