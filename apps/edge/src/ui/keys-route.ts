// GET /api/v1/keys[?since=24h|7d|30m|all]: the Keys view — per API key its recorded usage (runs, tokens in/out,
// outcomes, last use), its limits and what is left of its token budget in the current window.
//
// The figures are the ones `iop-edge usage --by key` prints: the same recorded usage (governance/recorded-usage.ts;
// the cluster's totals in cluster mode). An agent's model calls are child runs recorded under their parent's key,
// so a key's runs and tokens include its agents' children, each token once. Limits are the key's entry in
// `openai.api_keys` as the governor reads it (principalOf); the budget window is the governor's (periodAt, UTC day
// or month) and its use is the recorded tokens since the window started — what the governor counts after a
// restart. Live counters (in flight, last minute) are this edge's governor's. Never a secret: ids only.
import type http from 'node:http';
import type { EdgeConfig } from '@iop/config';
import type { UiKey, UiKeyBudget, UiKeys } from '@iop/ui-api';
import type { Clock } from '../clock.js';
import type { GovernorSnapshot } from '../governance/governor.js';
import { periodAt } from '../governance/budget-period.js';
import { principalOf, type Principal } from '../governance/principal.js';
import type { UsageSource } from '../governance/recorded-usage.js';
import type { UsageRow } from '../governance/usage-store.js';
import { UiError } from './errors.js';
import { sendJson } from './ui-http.js';

const DEFAULT_SINCE = '24h';
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

export interface KeysRouteDeps {
  config: () => EdgeConfig;
  /** Recorded usage; none = the route answers 503 usage_disabled. */
  usage?: UsageSource;
  /** This edge's governor counters per key. */
  liveLimits?: () => GovernorSnapshot[];
  clock: Clock;
}

export type KeysRoute = (response: http.ServerResponse, params: URLSearchParams) => Promise<void>;

export function createKeysRoute(deps: KeysRouteDeps): KeysRoute {
  return async (response, params) => {
    sendJson(response, 200, await keysView(deps, params.get('since') ?? DEFAULT_SINCE));
  };
}

/** The Keys view's answer for `since` (a duration such as 24h, or 'all'). */
export async function keysView(deps: KeysRouteDeps, since: string): Promise<UiKeys> {
  const usage = deps.usage;
  if (!usage) throw new UiError('usage_disabled', 'usage is not recorded on this edge');
  const nowMs = deps.clock.now();
  const sinceMs = since === 'all' ? 0 : Math.max(0, nowMs - durationMs(since));
  const principals = deps.config().openai.api_keys.map(principalOf);
  const recorded = byGroup(await usage({ by: 'key', sinceMs }));
  const spent = await budgetUse(usage, principals, nowMs);
  const live = new Map((deps.liveLimits?.() ?? []).map((entry) => [entry.principal, entry]));
  const keys: UiKey[] = principals.map((principal) =>
    keyRow(principal.id, principal, recorded.get(principal.id), live.get(principal.id), spent, nowMs),
  );
  const configured = new Set(principals.map((principal) => principal.id));
  for (const [id, row] of recorded) {
    if (!configured.has(id)) keys.push(keyRow(id, undefined, row, live.get(id), spent, nowMs));
  }
  return { now_ms: nowMs, since_ms: sinceMs, keys };
}

/** Tokens each key recorded since the start of each budget window in force (a day, a month: at most two reads). */
async function budgetUse(
  usage: UsageSource,
  principals: readonly Principal[],
  nowMs: number,
): Promise<Map<number, Map<string, UsageRow>>> {
  const starts = new Set<number>();
  for (const principal of principals) {
    if (principal.tokenBudget) starts.add(periodAt(nowMs, principal.tokenBudget.per).startMs);
  }
  const spent = new Map<number, Map<string, UsageRow>>();
  for (const startMs of starts) spent.set(startMs, byGroup(await usage({ by: 'key', sinceMs: startMs })));
  return spent;
}

function keyRow(
  id: string,
  principal: Principal | undefined,
  row: UsageRow | undefined,
  live: GovernorSnapshot | undefined,
  spent: Map<number, Map<string, UsageRow>>,
  nowMs: number,
): UiKey {
  return {
    id,
    configured: principal !== undefined,
    models: principal?.models ? [...principal.models] : [],
    rpm: principal?.rpm ?? null,
    tpm: principal?.tpm ?? null,
    max_concurrent: principal?.maxConcurrent ?? null,
    runs: row?.runs ?? 0,
    child_runs: row?.childRuns ?? 0,
    input_tokens: row?.inputTokens ?? 0,
    output_tokens: row?.outputTokens ?? 0,
    outcomes: { completed: 0, error: 0, cancelled: 0, rejected: 0, ...row?.outcomes },
    last_used_ms: row?.lastAtMs ? row.lastAtMs : null,
    budget: principal ? budgetOf(principal, spent, nowMs) : null,
    live: live
      ? {
          in_flight: live.inFlight,
          requests_last_minute: live.requestsLastMinute,
          tokens_last_minute: live.tokensLastMinute,
        }
      : null,
  };
}

function budgetOf(
  principal: Principal,
  spent: Map<number, Map<string, UsageRow>>,
  nowMs: number,
): UiKeyBudget | null {
  const budget = principal.tokenBudget;
  if (!budget) return null;
  const window = periodAt(nowMs, budget.per);
  const row = spent.get(window.startMs)?.get(principal.id);
  const used = row ? row.inputTokens + row.outputTokens : 0;
  return {
    tokens: budget.tokens,
    per: budget.per,
    window_start_ms: window.startMs,
    window_end_ms: window.endMs,
    used,
    left: Math.max(0, budget.tokens - used),
  };
}

function byGroup(rows: readonly UsageRow[]): Map<string, UsageRow> {
  return new Map(rows.map((row) => [row.group, row]));
}

function durationMs(text: string): number {
  const match = /^(\d+)([mhd])$/.exec(text);
  const unit = match ? UNIT_MS[match[2] ?? ''] : undefined;
  if (!match || unit === undefined || Number(match[1]) <= 0) {
    throw new UiError('invalid_request', `since must be a duration such as 30m, 24h or 7d, or 'all'`);
  }
  return Number(match[1]) * unit;
}
