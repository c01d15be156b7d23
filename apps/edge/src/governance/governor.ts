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
//
// The parts: limit-checks.ts (admission: may one more run in), limit-accounting.ts (what an admitted run takes
// and gives back), principal-counters.ts (the per-key windows and slots), budget-period.ts (the budget's period).
import type { Clock } from '../clock.js';
import { currentBudget, periodAt, type SpentTokens } from './budget-period.js';
import { GovernanceError } from './errors.js';
import { takeLimits } from './limit-accounting.js';
import { budgetRefusal, rateRefusal } from './limit-checks.js';
import type { LimitLease } from './limit-lease.js';
import { allowsModel, type Principal } from './principal.js';
import { PrincipalCounterTable, type PrincipalCountersSnapshot } from './principal-counters.js';
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

export type { SpentTokens };
/** The UTC day or month containing a time: the budget's period (budget-period.ts). */
export { periodAt };

export interface GovernorOptions {
  clock: Clock;
  sink: UsageSink;
  spent: SpentTokens;
  /** Told about every refusal (metrics). */
  onRefused?: (principal: string, error: GovernanceError) => void;
}

/** One principal's counters (tests, dashboard). */
export type GovernorSnapshot = PrincipalCountersSnapshot;

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

export function createGovernor(options: GovernorOptions): Governor {
  const { clock } = options;
  const counters = new PrincipalCounterTable();

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
    const state = counters.of(principal.id);
    const refusal = rateRefusal(principal, state, now, child);
    if (refusal) refuse(principal, refusal);
    const budget = currentBudget(principal, state, now, options.spent, elsewhere);
    const exhausted = budgetRefusal(principal, budget, now);
    if (exhausted) refuse(principal, exhausted);
    return takeLimits(state, budget, estimate, now, child, clock);
  }

  return {
    admit(request) {
      const { principal } = request;
      const estimate = Math.max(0, Math.ceil(request.estimatedTokens));
      if (!principal) return openAdmission(options, '', request, undefined);
      if (!allowsModel(principal, request.model)) {
        refuse(
          principal,
          new GovernanceError('model_not_allowed', 'models', `The model '${request.model}' does not exist`),
        );
      }
      // Limits taken on the key's home edge (cluster mode) travel with the principal.
      return openAdmission(
        options,
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
      return counters.snapshot(clock.now());
    },
  };
}

/** The run's handle on its admission: `finish` gives the lease back and records the run's usage, once. */
function openAdmission(
  options: Pick<GovernorOptions, 'clock' | 'sink'>,
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
        atMs: options.clock.now(),
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
