// Typed errors of the ops dashboard surface, and the one mapping of any error to the dashboard API's HTTP status
// and `{error: {code, message}}` body. Errors from the layers below (ServiceError, PoolError, RefreshError...) all
// carry a stable `code` and a `fault` ('caller' | 'transient' | 'bug'); the mapping reads those two fields only.
import { errorGuard, typedError } from '@iop/errors';

export type UiErrorCode =
  | 'insecure_listen' // non-loopback ui.listen without refresh.admin_token
  | 'listen_failed' // the port could not be bound
  | 'unauthorized' // missing or wrong admin token, or no live login
  | 'too_many_attempts' // login throttled (per address or for the whole edge)
  | 'not_found'
  | 'method_not_allowed'
  | 'unsupported_media_type'
  | 'invalid_json'
  | 'invalid_request'
  | 'body_too_large'
  | 'too_many_streams'
  | 'too_many_playgrounds'
  | 'refresh_disabled'
  | 'playground_disabled'
  | 'usage_disabled' // the Keys view on an edge that records no usage
  | 'shutting_down'
  | 'internal';

const STATUS: Record<UiErrorCode, number> = {
  insecure_listen: 500,
  listen_failed: 500,
  unauthorized: 401,
  too_many_attempts: 429,
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  invalid_json: 400,
  invalid_request: 400,
  body_too_large: 413,
  too_many_streams: 503,
  too_many_playgrounds: 429,
  refresh_disabled: 503,
  playground_disabled: 503,
  usage_disabled: 503,
  shutting_down: 503,
  internal: 500,
};

/** Codes of lower layers with a more precise status than their fault gives. */
const FOREIGN_STATUS: Record<string, number> = {
  queue_full: 429,
  queue_timeout: 429,
  refresh_busy: 409,
  model_not_found: 404,
  node_not_found: 404,
  session_not_found: 404,
  aborted: 499,
};

/** `code` is a UiErrorCode, or the code of the lower layer's error it wraps. */
export class UiError extends typedError<string>('UiError') {
  /** HTTP status of the dashboard API's answer. */
  readonly status: number;
  /** Sent as Retry-After (seconds) when set. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: string,
    message: string,
    options?: { cause?: unknown; status?: number; retryAfterSeconds?: number },
  ) {
    super(code, message, options);
    this.status = options?.status ?? STATUS[code as UiErrorCode] ?? 500;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  /** Any error as a UiError: a typed error keeps its code, its fault picks the status; anything else is a bug. */
  static from(error: unknown): UiError {
    if (error instanceof UiError) return error;
    const typed = error as { code?: unknown; fault?: unknown } | undefined;
    if (error instanceof Error && typeof typed?.code === 'string') {
      const code = typed.code;
      const fault = typed.fault;
      const status = FOREIGN_STATUS[code] ?? (fault === 'caller' ? 400 : fault === 'transient' ? 503 : 500);
      return new UiError(code, error.message, { cause: error, status });
    }
    return new UiError('internal', error instanceof Error ? error.message : String(error), { cause: error });
  }
}

export const isUiError = errorGuard(UiError);
