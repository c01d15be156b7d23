// The OpenAI surface's error type and the single mapping from every error the surface can meet (its own
// validation, service (admission included), run failures, body parsing) to an HTTP status and an OpenAI error body.
import { isServiceError, type ServiceError } from '../service/errors.js';

export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'upstream_error'
  | 'timeout_error';

/** An error with its OpenAI shape decided where it is raised. */
export class OpenAIHttpError extends Error {
  override readonly name = 'OpenAIHttpError';

  constructor(
    readonly status: number,
    readonly type: OpenAIErrorType,
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function invalidRequest(
  message: string,
  param: string | null,
  code = 'invalid_request',
): OpenAIHttpError {
  return new OpenAIHttpError(400, 'invalid_request_error', code, message, param);
}

export function modelNotFound(model: string): OpenAIHttpError {
  return new OpenAIHttpError(
    404,
    'invalid_request_error',
    'model_not_found',
    `The model '${model}' does not exist`,
    'model',
  );
}

/**
 * Run error codes that mean the request itself cannot be served (the node refused what the caller asked for):
 * 400, not a gateway failure.
 */
const CALLER_RUN_ERRORS: ReadonlySet<string> = new Set([
  'workspace_not_allowed',
  'workspace_not_found',
  'workspace_mismatch',
  'invalid_session_id',
]);

/** A run that ended with an error part, or an operator cancel, before the response could be produced. */
export function runFailed(code: string, message: string): OpenAIHttpError {
  if (code === 'timeout' || code === 'deadline_exceeded') {
    return new OpenAIHttpError(504, 'timeout_error', code, message);
  }
  if (CALLER_RUN_ERRORS.has(code)) {
    return new OpenAIHttpError(
      400,
      'invalid_request_error',
      code,
      message,
      code.startsWith('workspace') ? 'metadata.workspace' : null,
    );
  }
  return new OpenAIHttpError(502, 'upstream_error', code || 'upstream_error', message);
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface MappedError {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
}

/** The one place errors become HTTP statuses and bodies. */
export function mapOpenAIError(error: unknown): MappedError {
  if (error instanceof OpenAIHttpError) {
    return shape(error.status, error.type, error.code, error.message, error.param, error.headers);
  }
  if (isServiceError(error)) return mapServiceError(error);
  const bodyError = bodyParserError(error);
  if (bodyError) return bodyError;
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

/** express.json() failures carry `type` and `status`. */
function bodyParserError(error: unknown): MappedError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { type, status } = error as { type?: unknown; status?: unknown };
  if (type === 'entity.parse.failed') {
    return shape(
      400,
      'invalid_request_error',
      'invalid_json',
      'The request body is not valid JSON',
      null,
      {},
    );
  }
  if (type === 'entity.too.large') {
    return shape(
      413,
      'invalid_request_error',
      'request_too_large',
      'The request body is too large',
      null,
      {},
    );
  }
  if (typeof type === 'string' && typeof status === 'number' && status >= 400 && status < 500) {
    const message = error instanceof Error ? error.message : 'The request body could not be read';
    return shape(status, 'invalid_request_error', 'invalid_body', message, null, {});
  }
  return undefined;
}

function shape(
  status: number,
  type: string,
  code: string | null,
  message: string,
  param: string | null,
  headers: Record<string, string>,
): MappedError {
  return { status, body: { error: { message, type, param, code } }, headers };
}

/** The SSE data line for a failure after the stream started. */
export function errorDataObject(error: unknown): OpenAIErrorBody {
  return mapOpenAIError(error).body;
}
