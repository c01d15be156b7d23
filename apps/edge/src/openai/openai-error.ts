// The OpenAI surface's error type and the single mapping from every error the surface can meet (its own
// validation, service (admission included), the surface kit's errors — model resolution, run failures — and body
// parsing) to an HTTP status and an OpenAI error body `{error:{message,type,param,code}}`.
import { isServiceError, type ServiceError } from '../service/errors.js';
import { bodyReadFailure, SurfaceError } from '../surface-kit/surface-error.js';

export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'upstream_error'
  | 'timeout_error';

/** An error with its OpenAI shape decided where it is raised. */
export class OpenAIHttpError extends SurfaceError {
  override readonly name: string = 'OpenAIHttpError';

  constructor(
    status: number,
    readonly type: OpenAIErrorType,
    code: string | null,
    message: string,
    param: string | null = null,
    headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(status, code, message, param, headers, options);
  }
}

export function invalidRequest(
  message: string,
  param: string | null,
  code = 'invalid_request',
): OpenAIHttpError {
  return new OpenAIHttpError(400, 'invalid_request_error', code, message, param);
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface MappedError {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
  /** The body's code (for logs). */
  code: string | null;
}

/** The one place errors become HTTP statuses and bodies. */
export function mapOpenAIError(error: unknown): MappedError {
  if (error instanceof OpenAIHttpError) {
    return shape(error.status, error.type, error.code, error.message, error.param, error.headers);
  }
  if (error instanceof SurfaceError) {
    return shape(
      error.status,
      typeForStatus(error.status),
      error.code,
      error.message,
      error.param,
      error.headers,
    );
  }
  if (isServiceError(error)) return mapServiceError(error);
  const failure = bodyReadFailure(error);
  if (failure) return shape(failure.status, 'invalid_request_error', failure.code, failure.message, null, {});
  return shape(500, 'server_error', 'internal_error', 'The edge failed to handle the request', null, {});
}

function mapServiceError(error: ServiceError): MappedError {
  const retryAfter = { 'retry-after': String(error.retryAfterSeconds ?? 1) };
  switch (error.code) {
    case 'invalid_request':
      return shape(400, 'invalid_request_error', 'invalid_request', error.message, null, {});
    case 'model_not_found':
      return shape(404, 'invalid_request_error', 'model_not_found', error.message, 'model', {});
    case 'queue_full':
    case 'rate_limited':
    case 'concurrency_limited':
    case 'budget_exhausted':
      return shape(429, 'rate_limit_error', error.code, error.message, null, retryAfter);
    case 'parent_not_live':
      return shape(403, 'permission_error', error.code, error.message, null, {});
    case 'queue_timeout':
    case 'no_provider_available':
      return shape(503, 'server_error', error.code, error.message, null, retryAfter);
    case 'aborted':
      // Only a client that already went away sees this; the status is for the log.
      return shape(499, 'invalid_request_error', 'client_closed_request', error.message, null, {});
    case 'no_nodes':
    case 'node_not_found':
    case 'node_ambiguous':
      return shape(503, 'server_error', error.code, error.message, null, retryAfter);
    case 'shutting_down':
      return shape(503, 'server_error', error.code, error.message, null, {});
    case 'node_disconnected':
    case 'node_error':
      return shape(502, 'upstream_error', error.code, error.message, null, {});
    case 'timeout':
      return shape(504, 'timeout_error', 'timeout', error.message, null, {});
    default: {
      const unreachable: never = error.code;
      return shape(500, 'server_error', String(unreachable), error.message, null, {});
    }
  }
}

/** The OpenAI type of a kit error's status (a missing model is an invalid request in OpenAI's API). */
function typeForStatus(status: number): OpenAIErrorType | 'permission_error' {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 502) return 'upstream_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function shape(
  status: number,
  type: string,
  code: string | null,
  message: string,
  param: string | null,
  headers: Record<string, string>,
): MappedError {
  return { status, body: { error: { message, type, param, code } }, headers, code };
}

/** The SSE data line for a failure after the stream started. */
export function errorDataObject(error: unknown): OpenAIErrorBody {
  return mapOpenAIError(error).body;
}
