// Accounting: what an admitted run takes from its principal's counters (a concurrency slot unless it is a child
// run, one request, its estimated tokens in the tpm window and against the budget) and the lease that gives them
// back when the run ends — exactly once, correcting the estimate to the tokens the run used.
import type { Clock } from '../clock.js';
import type { LimitLease } from './limit-lease.js';
import type { BudgetPeriod, PrincipalCounters } from './principal-counters.js';

/** Takes the run's share of the counters at `now`; the lease's `finish` returns it (idempotent). */
export function takeLimits(
  counters: PrincipalCounters,
  budget: BudgetPeriod | undefined,
  estimate: number,
  now: number,
  child: boolean,
  clock: Clock,
): LimitLease {
  if (!child) counters.inFlight += 1;
  counters.requests.add(now, 1);
  counters.tokens.add(now, estimate);
  /** What this run reserved against the budget (0 when the key had no budget at admission). */
  const reserved = budget ? estimate : 0;
  if (budget) budget.reserved += estimate;
  let finished = false;
  return {
    finish(actualTokens) {
      if (finished) return;
      finished = true;
      if (!child) counters.inFlight -= 1;
      // The reservation leaves the second it was taken in (nothing is left to correct once that second left the
      // window), and what the run used counts now, when it was delivered: a run longer than the window is not
      // written into a second that left it.
      counters.tokens.add(now, -estimate);
      counters.tokens.add(clock.now(), actualTokens);
      // The run's usage is recorded now, so its tokens count in the period current now (reservations carry
      // over a period change).
      if (counters.budget) {
        counters.budget.reserved = Math.max(0, counters.budget.reserved - reserved);
        counters.budget.spent += actualTokens;
      }
    },
  };
}
