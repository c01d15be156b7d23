// Typed errors of the config-refresh coordinator. A refresh that merely classifies as restart_required or
// rejected is a result, not an error; these are the cases where no result can be given at all.
import { errorGuard, typedError, type FaultTable } from '@iop/errors';

export type RefreshErrorCode =
  | 'refresh_busy' // another refresh held the lock longer than the wait bound
  | 'refresh_closed'; // the edge is shutting down

const FAULT: FaultTable<RefreshErrorCode> = {
  refresh_busy: 'transient',
  refresh_closed: 'transient',
};

export class RefreshError extends typedError('RefreshError', FAULT) {}

export const isRefreshError = errorGuard(RefreshError);
