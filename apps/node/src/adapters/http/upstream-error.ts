// Typed failures of an upstream HTTP exchange (Ollama, OpenAI-compatible servers). The `code` is what a run's
// `error` part carries: `upstream_http_<status>`, `upstream_error` (a failure the server reported or a broken
// stream), `upstream_unreachable` (no connection), `upstream_timeout` (request_timeout_ms of silence), and
// `invalid_request` (the run cannot be expressed for this backend; nothing was sent), and `image_fetch_failed` (a
// remote image the node fetches for the backend could not be fetched; the message names the cause).
import { typedError } from '@iop/errors';

export type UpstreamErrorCode =
  | `upstream_http_${number}`
  | 'upstream_error'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'invalid_request'
  | 'image_fetch_failed';

export class UpstreamError extends typedError<UpstreamErrorCode>('UpstreamError') {
  /** HTTP status for `upstream_http_*`. */
  readonly status: number | undefined;
  /** Whether the same request may succeed elsewhere or later (connection problems, 429, 5xx). */
  readonly retryable: boolean;

  constructor(
    code: UpstreamErrorCode,
    message: string,
    options: { status?: number; retryable: boolean; cause?: unknown },
  ) {
    super(code, message, options);
    this.status = options.status;
    this.retryable = options.retryable;
  }

  static http(status: number, message: string): UpstreamError {
    const retryable = status === 408 || status === 429 || status >= 500;
    return new UpstreamError(`upstream_http_${status}`, message, { status, retryable });
  }
}

/** The caller aborted the exchange (cancel, run deadline, node shutdown): not a failure of the upstream. */
export class UpstreamCancelled extends Error {
  override readonly name = 'UpstreamCancelled';
  readonly reason: string;

  constructor(reason: string) {
    super(`upstream request cancelled: ${reason}`);
    this.reason = reason;
  }
}

/** A readable abort reason (string, Error or anything else). */
export function reasonText(reason: unknown): string {
  if (typeof reason === 'string' && reason !== '') return reason;
  // Duck-typed: a reason may be an Error (or DOMException) from another realm.
  if (typeof reason === 'object' && reason !== null) {
    const { name, message } = reason as { name?: unknown; message?: unknown };
    if (name !== 'AbortError' && typeof message === 'string' && message !== '') return message;
  }
  return 'cancelled';
}
