// Typed errors of the config-refresh coordinator. A refresh that merely classifies as restart_required or
// rejected is a result, not an error; these are the cases where no result can be given at all.
import type { ErrorFault } from '../fault.js';

export type RefreshErrorCode =
  | 'refresh_busy' // another refresh held the lock longer than the wait bound
  | 'refresh_closed'; // the edge is shutting down

const FAULT: Record<RefreshErrorCode, ErrorFault> = {
  refresh_busy: 'transient',
  refresh_closed: 'transient',
};

export class RefreshError extends Error {
  override readonly name = 'RefreshError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: RefreshErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = FAULT[code];
  }
}

export function isRefreshError(error: unknown): error is RefreshError {
  return error instanceof RefreshError;
}
