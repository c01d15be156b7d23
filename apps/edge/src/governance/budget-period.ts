// Budget bookkeeping: a key's token budget counts prompt + completion tokens per UTC day or month. The spent
// figure of the current period is read from the usage store the first time a key is seen in that period (so a
// restart keeps what was spent); what runs in flight reserved carries over a period change.
import type { Principal } from './principal.js';
import type { BudgetPeriod, PrincipalCounters } from './principal-counters.js';

/** What budgets read at the start of a period (the usage store). */
export interface SpentTokens {
  tokensSince(principal: string, sinceMs: number): number;
}

/**
 * The principal's budget period current at `now` (undefined when the key has no budget), rolled over into
 * `counters.budget` when the period changed. `elsewhere`: what other stores recorded, added on a rollover.
 */
export function currentBudget(
  principal: Principal,
  counters: PrincipalCounters,
  now: number,
  spent: SpentTokens,
  elsewhere: SpentTokens | undefined,
): BudgetPeriod | undefined {
  const config = principal.tokenBudget;
  if (!config) return undefined;
  const { startMs, endMs } = periodAt(now, config.per);
  if (counters.budget?.startMs !== startMs || counters.budget.endMs !== endMs) {
    // A new period (or the first sight of the key): what this period already spent is on disk.
    counters.budget = {
      startMs,
      endMs,
      spent: spent.tokensSince(principal.id, startMs) + (elsewhere?.tokensSince(principal.id, startMs) ?? 0),
      reserved: counters.budget?.reserved ?? 0,
    };
  }
  return counters.budget;
}

/** The UTC day or month containing `nowMs`. */
export function periodAt(nowMs: number, per: 'day' | 'month'): { startMs: number; endMs: number } {
  const date = new Date(nowMs);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  if (per === 'day') {
    const startMs = Date.UTC(year, month, date.getUTCDate());
    return { startMs, endMs: startMs + 86_400_000 };
  }
  return { startMs: Date.UTC(year, month, 1), endMs: Date.UTC(year, month + 1, 1) };
}
