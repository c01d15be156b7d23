// Typed errors of the cli adapter. Every failure a run can meet has a stable `code` that ends up in the run's
// `error` part, plus whether it is the caller's fault (bad profile, bad workspace) or transient (process died).
import { typedError, type ErrorFault, type FaultTable } from '@iop/errors';

export type CliErrorCode =
  | 'unknown_target'
  | 'invalid_profile'
  | 'workspace_not_found'
  | 'workspace_mismatch'
  | 'workspace_not_allowed'
  | 'invalid_session_id'
  | 'invalid_request'
  | 'output_line_too_long'
  | 'command_not_found'
  | 'spawn_failed'
  | 'session_limit'
  | 'session_busy'
  | 'process_exited'
  | 'cli_failed'
  | 'cli_error'
  | 'deadline_exceeded'
  | 'backend_unreachable'
  | 'adapter_closed'
  | 'run_as_unavailable'
  | 'model_endpoint_unavailable'
  | 'internal';

export type CliErrorKind = ErrorFault;

/** Whose fault each code is when the thrower does not say. */
const DEFAULT_KIND: FaultTable<CliErrorCode> = {
  unknown_target: 'caller',
  invalid_profile: 'caller',
  workspace_not_found: 'caller',
  workspace_mismatch: 'caller',
  workspace_not_allowed: 'caller',
  invalid_session_id: 'caller',
  invalid_request: 'caller',
  command_not_found: 'caller',
  session_busy: 'caller',
  deadline_exceeded: 'caller',
  run_as_unavailable: 'caller',
  session_limit: 'transient',
  spawn_failed: 'transient',
  process_exited: 'transient',
  cli_failed: 'transient',
  cli_error: 'transient',
  output_line_too_long: 'transient',
  backend_unreachable: 'transient',
  adapter_closed: 'transient',
  model_endpoint_unavailable: 'transient',
  internal: 'bug',
};

export class CliAdapterError extends typedError<CliErrorCode>('CliAdapterError') {
  readonly kind: CliErrorKind;

  constructor(code: CliErrorCode, message: string, options: { kind?: CliErrorKind; cause?: unknown } = {}) {
    super(code, message, options);
    this.kind = options.kind ?? DEFAULT_KIND[code];
  }

  /** Transient failures may succeed when retried (a process that died, a server still starting). */
  get retryable(): boolean {
    return this.kind === 'transient';
  }
}

export function toCliAdapterError(error: unknown): CliAdapterError {
  if (error instanceof CliAdapterError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CliAdapterError('internal', message, { cause: error });
}
