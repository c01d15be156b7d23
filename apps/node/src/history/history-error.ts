// Typed failures of the run history store.
import { typedError, type FaultTable } from '@iop/errors';

export type HistoryErrorCode = 'open_failed' | 'write_failed' | 'read_failed' | 'closed';

/** Open failures are usually the operator's (bad path, permissions); the rest are bugs or disk trouble. */
const FAULT: FaultTable<HistoryErrorCode> = {
  open_failed: 'caller',
  write_failed: 'transient',
  read_failed: 'transient',
  closed: 'bug',
};

export class HistoryError extends typedError('HistoryError', FAULT) {}
