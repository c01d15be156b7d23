// Typed errors of the cli adapter. Every failure a run can meet has a stable `code` that ends up in the run's
// `error` part, plus whether it is the caller's fault (bad profile, bad workspace) or transient (process died).
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

export type CliErrorKind = 'caller' | 'transient' | 'bug';

export class CliAdapterError extends Error {
  readonly code: CliErrorCode;
  readonly kind: CliErrorKind;

  constructor(code: CliErrorCode, message: string, options: { kind?: CliErrorKind; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'CliAdapterError';
    this.code = code;
    this.kind = options.kind ?? defaultKind(code);
  }

  /** Transient failures may succeed when retried (a process that died, a server still starting). */
  get retryable(): boolean {
    return this.kind === 'transient';
  }
}

function defaultKind(code: CliErrorCode): CliErrorKind {
  switch (code) {
    case 'unknown_target':
    case 'invalid_profile':
    case 'workspace_not_found':
    case 'workspace_mismatch':
    case 'workspace_not_allowed':
    case 'invalid_session_id':
    case 'invalid_request':
    case 'command_not_found':
    case 'session_busy':
    case 'deadline_exceeded':
    case 'run_as_unavailable':
      return 'caller';
    case 'session_limit':
    case 'spawn_failed':
    case 'process_exited':
    case 'cli_failed':
    case 'cli_error':
    case 'output_line_too_long':
    case 'backend_unreachable':
    case 'adapter_closed':
    case 'model_endpoint_unavailable':
      return 'transient';
    case 'internal':
      return 'bug';
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

export function toCliAdapterError(error: unknown): CliAdapterError {
  if (error instanceof CliAdapterError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CliAdapterError('internal', message, { cause: error });
}
