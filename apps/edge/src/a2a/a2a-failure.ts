// The one mapper of the A2A surface from any failure to its answer (the kit's sendErrorResponse writes it). A
// JSON-RPC failure is a JSON-RPC error object with HTTP 200, as JSON-RPC over HTTP wants (a ServiceError carries
// the Retry-After the OpenAI surface would send). What is refused before the envelope is read is an HTTP failure
// with its own status: a missing or wrong token (401), a body over the limit (413, the connection closed rather
// than drained), a body that is not JSON (the JSON-RPC parse error).
import { SurfaceError, bodyReadFailure } from '../surface-kit/surface-error.js';
import type { MappedFailure } from '../surface-kit/error-response.js';
import { JSON_RPC_ERRORS, JsonRpcError, retryAfterOf, toJsonRpcError, type JsonRpcId } from './json-rpc.js';

/** The caller's token is missing or wrong: 401 before a byte of the body is read. */
export function unauthorized(): SurfaceError {
  return new SurfaceError(401, 'unauthorized', 'missing or invalid bearer token', null, {
    'www-authenticate': 'Bearer',
    connection: 'close',
  });
}

export function mapA2AFailure(error: unknown, id: JsonRpcId): MappedFailure {
  if (error instanceof SurfaceError) {
    return {
      status: error.status,
      body: toJsonRpcError(new JsonRpcError(JSON_RPC_ERRORS.invalidRequest, error.message), null),
      headers: error.headers,
      code: error.code,
    };
  }
  const unreadable = bodyReadFailure(error);
  if (unreadable?.code === 'request_too_large') {
    return mapA2AFailure(
      new SurfaceError(413, unreadable.code, unreadable.message, null, { connection: 'close' }),
      null,
    );
  }
  if (unreadable) {
    return jsonRpcFailure(
      new JsonRpcError(JSON_RPC_ERRORS.parseError, 'request body is not valid JSON'),
      null,
    );
  }
  return jsonRpcFailure(error, id);
}

function jsonRpcFailure(error: unknown, id: JsonRpcId): MappedFailure {
  const body = toJsonRpcError(error, id);
  const retryAfter = retryAfterOf(error);
  return {
    status: 200,
    body,
    headers: retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) },
    code: String(body.error.code),
  };
}
