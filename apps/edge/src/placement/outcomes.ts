// What the run supervisor tells placement about an attempt, in placement's own terms: why a dispatch failed (the
// `reason` label of iop_run_retries_total) and where each attempt's outcome is reported. The pool's circuit
// breaker implements ProviderOutcomes; the supervisor and the retry policy know only these types.

/** Why a dispatch failed, as the supervisor classifies it (retry-policy.ts). */
export type DispatchFailureReason =
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'upstream_error'
  | 'upstream_5xx'
  | 'upstream_429'
  | 'node_busy'
  | 'node_lost';

/** Where the run supervisor reports what a provider did with a run (the pool's circuit breaker). */
export interface ProviderOutcomes {
  /** The provider produced output or completed the run. */
  succeeded(providerId: string): void;
  /** The provider (its backend or node) failed the run before any output. */
  failed(providerId: string, reason: DispatchFailureReason): void;
}
