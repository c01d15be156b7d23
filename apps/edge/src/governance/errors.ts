// Typed errors of governance (limits of a principal). The service turns them into ServiceErrors of the same code
// (a model outside a key's allow-list becomes `model_not_found`, so the key cannot tell it from a missing model).
import { errorGuard, typedError, type FaultTable } from '@iop/errors';

export type GovernanceErrorCode =
  | 'rate_limited' // rpm or tpm of the key used up in the rolling minute
  | 'concurrency_limited' // the key's max_concurrent runs are in flight
  | 'budget_exhausted' // the key's token budget for the day/month is spent
  | 'model_not_allowed'; // the model is outside the key's allow-list

/** The limit a refusal names (error messages and metrics). */
export type GovernanceLimit = 'rpm' | 'tpm' | 'max_concurrent' | 'token_budget' | 'models';

/** Every refusal is the caller's: its key is over a limit it was given. */
const FAULT: FaultTable<GovernanceErrorCode> = {
  rate_limited: 'caller',
  concurrency_limited: 'caller',
  budget_exhausted: 'caller',
  model_not_allowed: 'caller',
};

export class GovernanceError extends typedError('GovernanceError', FAULT) {
  constructor(
    code: GovernanceErrorCode,
    readonly limit: GovernanceLimit,
    message: string,
    /** When a retry may succeed: whole seconds, at least 1 (the surfaces' Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(code, message);
  }
}

export const isGovernanceError = errorGuard(GovernanceError);
