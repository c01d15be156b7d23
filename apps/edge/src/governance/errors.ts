// Typed errors of governance (limits of a principal). The service turns them into ServiceErrors of the same code
// (a model outside a key's allow-list becomes `model_not_found`, so the key cannot tell it from a missing model).
import type { ErrorFault } from '../fault.js';

export type GovernanceErrorCode =
  | 'rate_limited' // rpm or tpm of the key used up in the rolling minute
  | 'concurrency_limited' // the key's max_concurrent runs are in flight
  | 'budget_exhausted' // the key's token budget for the day/month is spent
  | 'model_not_allowed'; // the model is outside the key's allow-list

/** The limit a refusal names (error messages and metrics). */
export type GovernanceLimit = 'rpm' | 'tpm' | 'max_concurrent' | 'token_budget' | 'models';

export class GovernanceError extends Error {
  override readonly name = 'GovernanceError';
  readonly fault: ErrorFault = 'caller';

  constructor(
    readonly code: GovernanceErrorCode,
    readonly limit: GovernanceLimit,
    message: string,
    /** When a retry may succeed: whole seconds, at least 1 (the surfaces' Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function isGovernanceError(error: unknown): error is GovernanceError {
  return error instanceof GovernanceError;
}
