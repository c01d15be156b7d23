// Typed failures of the run history store.
export type HistoryErrorCode = 'open_failed' | 'write_failed' | 'read_failed' | 'closed';

export class HistoryError extends Error {
  override readonly name = 'HistoryError';
  readonly code: HistoryErrorCode;
  /** Open failures are usually the operator's (bad path, permissions); the rest are bugs or disk trouble. */
  readonly fault: 'caller' | 'transient' | 'bug';

  constructor(code: HistoryErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.fault = code === 'open_failed' ? 'caller' : code === 'closed' ? 'bug' : 'transient';
  }
}
