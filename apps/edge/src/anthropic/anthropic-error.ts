// The Anthropic surface's error type and the one mapping from every error its routes can meet (its own
// validation, the service's admission and run errors, the surface kit's errors — route resolution, run
// failures — and the body reader's) to an HTTP status, headers and Anthropic's error body
// `{type:'error', error:{type, message}}`. Statuses follow Anthropic's API: 529 `overloaded_error` when no capacity
// frees up in time (agent-contract/outer/anthropic-messages-api.md, "Errors").
import { isServiceError, type ServiceError } from '../service/errors.js';
import { bodyReadFailure, SurfaceError } from '../surface-kit/surface-error.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** An error with its Anthropic status and type decided where it is raised. */
export class AnthropicHttpError extends SurfaceError {
  override readonly name: string = 'AnthropicHttpError';

  constructor(
    status: number,
    readonly type: AnthropicErrorType,
    message: string,
    headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(status, type, message, null, headers, options);
  }
}

export function invalidRequest(message: string): AnthropicHttpError {
  return new AnthropicHttpError(400, 'invalid_request_error', message);
}

export function notFound(message: string): AnthropicHttpError {
  return new AnthropicHttpError(404, 'not_found_error', message);
}

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

export interface MappedAnthropicError {
  status: number;
  body: AnthropicErrorBody;
  headers: Record<string, string>;
  /** A stable code for logs (the service's or run's code where there is one). */
  code: string;
}

/** The one place errors of the Anthropic surface become statuses and bodies. */
export function mapAnthropicError(error: unknown): MappedAnthropicError {
  if (error instanceof AnthropicHttpError) {
    return shape(error.status, error.type, error.message, error.headers, error.type);
  }
  if (isServiceError(error)) return mapServiceError(error);
  if (error instanceof SurfaceError) {
    // Raised by the surface kit (model resolution, run failures): same status, Anthropic's type for it.
    const type = typeForStatus(error.status);
    const code = error.code ?? type;
    if (error.status === 404 && error.code === 'model_not_found') {
      return shape(404, 'not_found_error', error.message.replace(/^The model/, 'model:'), {}, code);
    }
    return shape(error.status, type, error.message, error.headers, code);
  }
  const failure = bodyReadFailure(error);
  if (failure) {
    const type = failure.status === 413 ? 'request_too_large' : 'invalid_request_error';
    return shape(failure.status, type, failure.message, {}, failure.code);
  }
  return shape(500, 'api_error', 'The edge failed to handle the request', {}, 'internal_error');
}

function mapServiceError(error: ServiceError): MappedAnthropicError {
  const retryAfter = { 'retry-after': String(error.retryAfterSeconds ?? 1) };
  switch (error.code) {
    case 'invalid_request':
      return shape(400, 'invalid_request_error', error.message, {}, error.code);
    case 'model_not_found':
      return shape(404, 'not_found_error', error.message, {}, error.code);
    case 'queue_full':
    case 'rate_limited':
    case 'concurrency_limited':
    case 'budget_exhausted':
      return shape(429, 'rate_limit_error', error.message, retryAfter, error.code);
    case 'parent_not_live':
      return shape(403, 'permission_error', error.message, {}, error.code);
    // No capacity became free in time, or none exists right now: Anthropic's "overloaded" (retried by its SDKs).
    case 'queue_timeout':
    case 'no_provider_available':
    case 'no_nodes':
    case 'node_not_found':
    case 'node_ambiguous':
      return shape(529, 'overloaded_error', error.message, retryAfter, error.code);
    case 'shutting_down':
      return shape(529, 'overloaded_error', error.message, {}, error.code);
    case 'aborted':
      // Only a client that already went away sees this; the status is for the log.
      return shape(499, 'invalid_request_error', error.message, {}, error.code);
    case 'node_disconnected':
    case 'node_error':
      return shape(502, 'api_error', error.message, {}, error.code);
    case 'timeout':
      return shape(504, 'api_error', error.message, {}, error.code);
    default: {
      const unreachable: never = error.code;
      return shape(500, 'api_error', error.message, {}, String(unreachable));
    }
  }
}

function typeForStatus(status: number): AnthropicErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

function shape(
  status: number,
  type: AnthropicErrorType,
  message: string,
  headers: Record<string, string>,
  code: string,
): MappedAnthropicError {
  return { status, body: { type: 'error', error: { type, message } }, headers, code };
}
