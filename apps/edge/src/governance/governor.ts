// Admission by principal: before a run takes any capacity, the governor checks the key's model allow-list,
// max_concurrent, rpm, tpm and token budget, and takes what the run may use (a concurrency slot, one request,
// its reserved tokens: the prompt's estimate plus its answer limit, admission-tokens.ts). The returned Admission
// is the run's handle on those: `finish` (exactly once, later calls ignored) returns the slot, settles tpm and the
// budget from the reservation to what the run used (the backend's usage, else an estimate of what was streamed:
// service/delivered-usage.ts), and records the run's usage. Limits live in this process: one edge is one counter (no per-replica drift).
// In cluster mode a key's limits are counted on its home edge (cluster/cluster-limits.ts): that edge calls
// `reserve`, and the run's principal carries the resulting lease (`Principal.lease`), so the governor that admits
// the run checks only the allow-list, hands the tokens the run used back to the lease, and records its usage.
//
// Budgets count prompt + completion tokens per UTC day or month; the spent figure of the current period is read
// from the usage store the first time a key is seen in that period, so a restart keeps what was spent. A budget
// refuses once what was reported plus what runs in flight reserved reaches it.
import type { Clock } from '../clock.js';
import { GovernanceError } from './errors.js';
import type { LimitLease } from './limit-lease.js';
import { allowsModel, type Principal } from './principal.js';
import { SlidingWindow } from './sliding-window.js';
import type { UsageOutcome, UsageRecord } from './usage-store.js';

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface AdmissionRequest {
  /** undefined = anonymous (no keys configured, console and admin runs): recorded, never limited. */
  principal: Principal | undefined;
  surface: string;
  /** The model the caller named (the allow-list is checked against it); a route's target otherwise. */
  model: string;
  /** Tokens the run may use (prompt estimate + answer limit): reserved against tpm and the budget until it ends. */
  estimatedTokens: number;
  /**
   * A child run (an agent's model call): rpm, tpm and the budget count it, `max_concurrent` does not — its parent
   * holds the key's slot, and counting the child too would let a key's own agents refuse their model calls.
   */
  child?: boolean;
}

export interface RunEnd {
  runId: string;
  outcome: UsageOutcome;
  usage: RunUsage;
  provider: string;
  node: string;
  queueMs: number;
  durationMs: number;
  /** A child run's parent (the agent run); '' for other runs. */
  parentRunId: string;
  /** An agent run's children's tokens (in + out), recorded beside its own; 0 for other runs. */
  childTokens: number;
}

/** A key's limits taken for one run (a slot, one request, the estimated tokens). */
export type { LimitLease };

export interface Admission {
  /** The principal id ('' = anonymous). */
  readonly principal: string;
  /** Ends the admission: returns its slot, corrects the estimate and records usage. Idempotent. */
  finish(end: RunEnd): void;
}

/** Where finished runs go (the usage store; metrics). */
export interface UsageSink {
  record(record: UsageRecord): void;
}

/** What budgets read at the start of a period (the usage store). */
export interface SpentTokens {
  tokensSince(principal: string, sinceMs: number): number;
}

export interface GovernorOptions {
  clock: Clock;
  sink: UsageSink;
  spent: SpentTokens;
  /** Told about every refusal (metrics). */
  onRefused?: (principal: string, error: GovernanceError) => void;
}

export interface GovernorSnapshot {
  principal: string;
  inFlight: number;
  requestsLastMinute: number;
  tokensLastMinute: number;
  budgetSpent: number | undefined;
}

export interface Governor {
  /** Checks and takes the principal's limits; throws GovernanceError when a limit refuses. */
  admit(request: AdmissionRequest): Admission;
  /**
   * Checks and takes only the principal's limits in this process's counters (no allow-list, no usage record):
   * what a key's home edge does for a run admitted elsewhere. Throws GovernanceError when a limit refuses.
   * `spentElsewhere`: what other stores recorded, added to this one's when a budget period is first seen here.
   * `child`: a child run, which `max_concurrent` does not count.
   */
  reserve(
    principal: Principal,
    estimatedTokens: number,
    spentElsewhere?: SpentTokens,
    child?: boolean,
  ): LimitLease;
  /** Current counters per principal seen (tests, dashboard). */
  snapshot(): GovernorSnapshot[];
}

interface BudgetPeriod {
  /** Epoch ms the period started (UTC). */
  startMs: number;
  endMs: number;
  spent: number;
  reserved: number;
}

interface PrincipalState {
  inFlight: number;
  readonly requests: SlidingWindow;
  readonly tokens: SlidingWindow;
  budget: BudgetPeriod | undefined;
}

export function createGovernor(options: GovernorOptions): Governor {
  const { clock } = options;
  const states = new Map<string, PrincipalState>();

  function stateOf(id: string): PrincipalState {
    let state = states.get(id);
    if (!state) {
      state = { inFlight: 0, requests: new SlidingWindow(), tokens: new SlidingWindow(), budget: undefined };
      states.set(id, state);
    }
    return state;
  }

  function budgetOf(
    principal: Principal,
    state: PrincipalState,
    now: number,
    elsewhere: SpentTokens | undefined,
  ): BudgetPeriod | undefined {
    const config = principal.tokenBudget;
    if (!config) return undefined;
    const { startMs, endMs } = periodAt(now, config.per);
    if (state.budget?.startMs !== startMs || state.budget.endMs !== endMs) {
      // A new period (or the first sight of the key): what this period already spent is on disk.
      state.budget = {
        startMs,
        endMs,
        spent:
          options.spent.tokensSince(principal.id, startMs) +
          (elsewhere?.tokensSince(principal.id, startMs) ?? 0),
        reserved: state.budget?.reserved ?? 0,
      };
    }
    return state.budget;
  }

  function refuse(principal: Principal, error: GovernanceError): never {
    options.onRefused?.(principal.id, error);
    throw error;
  }

  /** Checks and takes the principal's limits (max_concurrent, rpm, tpm, budget) at `now`. */
  function take(
    principal: Principal,
    estimate: number,
    now: number,
    elsewhere?: SpentTokens,
    child = false,
  ): LimitLease {
    const state = stateOf(principal.id);
    if (!child && principal.maxConcurrent !== null && state.inFlight >= principal.maxConcurrent) {
      refuse(
        principal,
        new GovernanceError(
          'concurrency_limited',
          'max_concurrent',
          `key '${principal.id}' already has ${state.inFlight} run(s) in flight (max_concurrent ${principal.maxConcurrent})`,
          1,
        ),
      );
    }
    if (principal.rpm !== null) {
      const waitMs = state.requests.waitMs(now, principal.rpm, 1);
      if (waitMs > 0) {
        refuse(
          principal,
          new GovernanceError(
            'rate_limited',
            'rpm',
            `key '${principal.id}' is over its limit of ${principal.rpm} requests per minute`,
            seconds(waitMs),
          ),
        );
      }
    }
    if (principal.tpm !== null) {
      const used = state.tokens.total(now);
      if (used >= principal.tpm) {
        refuse(
          principal,
          new GovernanceError(
            'rate_limited',
            'tpm',
            `key '${principal.id}' is over its limit of ${principal.tpm} tokens per minute`,
            seconds(state.tokens.waitMs(now, principal.tpm - 1, 0)),
          ),
        );
      }
    }
    const budget = budgetOf(principal, state, now, elsewhere);
    if (budget && principal.tokenBudget && budget.spent + budget.reserved >= principal.tokenBudget.tokens) {
      refuse(
        principal,
        new GovernanceError(
          'budget_exhausted',
          'token_budget',
          `key '${principal.id}' has used its budget of ${principal.tokenBudget.tokens} tokens per ${principal.tokenBudget.per}`,
          seconds(budget.endMs - now),
        ),
      );
    }
    if (!child) state.inFlight += 1;
    state.requests.add(now, 1);
    state.tokens.add(now, estimate);
    /** What this run reserved against the budget (0 when the key had no budget at admission). */
    const reserved = budget ? estimate : 0;
    if (budget) budget.reserved += estimate;
    let finished = false;
    return {
      finish(actualTokens) {
        if (finished) return;
        finished = true;
        if (!child) state.inFlight -= 1;
        // The reservation leaves the second it was taken in (nothing is left to correct once that second left the
        // window), and what the run used counts now, when it was delivered: a run longer than the window is not
        // written into a second that left it.
        state.tokens.add(now, -estimate);
        state.tokens.add(clock.now(), actualTokens);
        // The run's usage is recorded now, so its tokens count in the period current now (reservations carry
        // over a period change).
        if (state.budget) {
          state.budget.reserved = Math.max(0, state.budget.reserved - reserved);
          state.budget.spent += actualTokens;
        }
      },
    };
  }

  return {
    admit(request) {
      const { principal } = request;
      const estimate = Math.max(0, Math.ceil(request.estimatedTokens));
      if (!principal) return openAdmission('', request, undefined);
      if (!allowsModel(principal, request.model)) {
        refuse(
          principal,
          new GovernanceError('model_not_allowed', 'models', `The model '${request.model}' does not exist`),
        );
      }
      // Limits taken on the key's home edge (cluster mode) travel with the principal.
      return openAdmission(
        principal.id,
        request,
        principal.lease ?? take(principal, estimate, clock.now(), undefined, request.child === true),
      );
    },
    reserve(principal, estimatedTokens, spentElsewhere, child) {
      return take(
        principal,
        Math.max(0, Math.ceil(estimatedTokens)),
        clock.now(),
        spentElsewhere,
        child === true,
      );
    },
    snapshot() {
      const now = clock.now();
      return [...states.entries()].map(([principal, state]) => ({
        principal,
        inFlight: state.inFlight,
        requestsLastMinute: state.requests.total(now),
        tokensLastMinute: state.tokens.total(now),
        budgetSpent: state.budget?.spent,
      }));
    },
  };

  function openAdmission(
    principal: string,
    request: AdmissionRequest,
    /** The principal's limits taken for this run; undefined for an anonymous run. */
    lease: LimitLease | undefined,
  ): Admission {
    let finished = false;
    return {
      principal,
      finish(end) {
        if (finished) return;
        finished = true;
        const inputTokens = Math.max(0, end.usage.inputTokens);
        const outputTokens = Math.max(0, end.usage.outputTokens);
        lease?.finish(inputTokens + outputTokens);
        options.sink.record({
          atMs: clock.now(),
          runId: end.runId,
          principal,
          surface: request.surface,
          model: request.model,
          provider: end.provider,
          node: end.node,
          inputTokens,
          outputTokens,
          queueMs: end.queueMs,
          durationMs: end.durationMs,
          outcome: end.outcome,
          parentRunId: end.parentRunId,
          childTokens: end.childTokens,
        });
      },
    };
  }
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

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
