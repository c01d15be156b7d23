// Window bookkeeping: what this process counts per principal — runs in flight, a one-minute window of requests
// and one of tokens (sliding-window.ts), and the budget period current at the last admission. One entry per
// principal ever seen, created on first sight; the governor reads and changes the entries, this module only
// keeps them.
import { SlidingWindow } from './sliding-window.js';

/** A key's budget in the period it was last checked in (budget-period.ts rolls it over). */
export interface BudgetPeriod {
  /** Epoch ms the period started (UTC). */
  startMs: number;
  endMs: number;
  spent: number;
  reserved: number;
}

export interface PrincipalCounters {
  inFlight: number;
  readonly requests: SlidingWindow;
  readonly tokens: SlidingWindow;
  budget: BudgetPeriod | undefined;
}

export interface PrincipalCountersSnapshot {
  principal: string;
  inFlight: number;
  requestsLastMinute: number;
  tokensLastMinute: number;
  budgetSpent: number | undefined;
}

/** The counters of every principal seen, by principal id. */
export class PrincipalCounterTable {
  private readonly byPrincipal = new Map<string, PrincipalCounters>();

  /** The principal's counters, created empty on first sight. */
  of(id: string): PrincipalCounters {
    let counters = this.byPrincipal.get(id);
    if (!counters) {
      counters = {
        inFlight: 0,
        requests: new SlidingWindow(),
        tokens: new SlidingWindow(),
        budget: undefined,
      };
      this.byPrincipal.set(id, counters);
    }
    return counters;
  }

  /** Every principal's counters as of `now`. */
  snapshot(now: number): PrincipalCountersSnapshot[] {
    return [...this.byPrincipal.entries()].map(([principal, counters]) => ({
      principal,
      inFlight: counters.inFlight,
      requestsLastMinute: counters.requests.total(now),
      tokensLastMinute: counters.tokens.total(now),
      budgetSpent: counters.budget?.spent,
    }));
  }
}
