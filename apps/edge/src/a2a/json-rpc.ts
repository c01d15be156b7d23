// JSON-RPC 2.0 envelope handling for the A2A surface: request validation and the one place where errors become
// JSON-RPC error objects (ServiceErrors included: agent-contract/outer/a2a-json-rpc-api.md has the mapping).
import { isServiceError, type ServiceError } from '../service/errors.js';

export const JSON_RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  /** A2A 1.0: the agent has no extended card. */
  extendedAgentCardNotConfigured: -32007,
  /** A2A 1.0: the `A2A-Version` the client asked for is not one this agent speaks. */
  versionNotSupported: -32009,
  /** IOP: no capacity now (the OpenAI surface's 429): a provider queue is full. Retry after `data.retryAfterSeconds`. */
  capacityExhausted: -32050,
  /** IOP: nothing can serve the task now (the OpenAI surface's 503): queue timeout, no provider or node. */
  unavailable: -32051,
} as const;

export type JsonRpcId = string | number | null;

export class JsonRpcError extends Error {
  override readonly name = 'JsonRpcError';

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params: Record<string, unknown>;
}

export interface JsonRpcErrorBody {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** Validates the envelope (not the params). Throws JsonRpcError -32600 with the request id when it is readable. */
export function parseJsonRpcRequest(body: unknown): JsonRpcRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.invalidRequest,
      'request must be a JSON object (batches are not supported)',
    );
  }
  const record = body as Record<string, unknown>;
  const id = readId(record['id']);
  if (record['jsonrpc'] !== '2.0') {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidRequest, 'jsonrpc must be "2.0"', { id });
  }
  if (typeof record['method'] !== 'string' || record['method'] === '') {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidRequest, 'method must be a non-empty string', { id });
  }
  const params = record['params'] ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params must be an object', { id });
  }
  return { jsonrpc: '2.0', id, method: record['method'], params: params as Record<string, unknown> };
}

function readId(value: unknown): JsonRpcId {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return value;
  throw new JsonRpcError(JSON_RPC_ERRORS.invalidRequest, 'id must be a string, a number or null');
}

/** The id to answer with: the request's, or the one recorded on an envelope error. */
export function errorRequestId(error: unknown, fallback: JsonRpcId): JsonRpcId {
  if (
    error instanceof JsonRpcError &&
    typeof error.data === 'object' &&
    error.data !== null &&
    'id' in error.data
  ) {
    return (error.data as { id: JsonRpcId }).id;
  }
  return fallback;
}

export function toJsonRpcError(error: unknown, id: JsonRpcId): JsonRpcErrorBody {
  if (isServiceError(error)) return toJsonRpcError(fromServiceError(error), id);
  if (error instanceof JsonRpcError) {
    const data =
      typeof error.data === 'object' && error.data !== null && 'id' in error.data ? undefined : error.data;
    return {
      jsonrpc: '2.0',
      id,
      error: { code: error.code, message: error.message, ...(data === undefined ? {} : { data }) },
    };
  }
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: JSON_RPC_ERRORS.internalError,
      message: error instanceof Error ? error.message : String(error),
    },
  };
}

export function jsonRpcResult(
  id: JsonRpcId,
  result: unknown,
): { jsonrpc: '2.0'; id: JsonRpcId; result: unknown } {
  return { jsonrpc: '2.0', id, result };
}

/** What A2A callers see of an edge refusal: its code, the HTTP status the OpenAI surface would use, Retry-After. */
export interface ServiceErrorData {
  code: string;
  httpStatus: number;
  retryAfterSeconds?: number;
}

/** ServiceError → JSON-RPC error with the same semantics as the OpenAI surface's status codes. */
export function fromServiceError(error: ServiceError): JsonRpcError {
  const data = (httpStatus: number, retry: boolean): ServiceErrorData => ({
    code: error.code,
    httpStatus,
    ...(retry ? { retryAfterSeconds: error.retryAfterSeconds ?? 1 } : {}),
  });
  switch (error.code) {
    case 'queue_full':
    case 'rate_limited':
    case 'concurrency_limited':
    case 'budget_exhausted':
      return new JsonRpcError(JSON_RPC_ERRORS.capacityExhausted, error.message, data(429, true));
    case 'queue_timeout':
    case 'no_provider_available':
    case 'no_nodes':
    case 'node_not_found':
    case 'node_ambiguous':
    case 'node_disconnected':
      return new JsonRpcError(JSON_RPC_ERRORS.unavailable, error.message, data(503, true));
    case 'shutting_down':
      return new JsonRpcError(JSON_RPC_ERRORS.unavailable, error.message, data(503, false));
    case 'invalid_request':
    case 'model_not_found':
    case 'parent_not_live':
      return new JsonRpcError(JSON_RPC_ERRORS.invalidParams, error.message, data(400, false));
    case 'aborted':
    case 'node_error':
    case 'timeout':
      return new JsonRpcError(JSON_RPC_ERRORS.internalError, error.message, data(502, false));
    default: {
      const unreachable: never = error.code;
      return new JsonRpcError(JSON_RPC_ERRORS.internalError, `unknown error ${String(unreachable)}`);
    }
  }
}

/** The Retry-After a JSON-RPC error asks for, if any (the HTTP layer sets the header from it). */
export function retryAfterOf(error: unknown): number | undefined {
  const mapped = isServiceError(error) ? fromServiceError(error) : error;
  if (!(mapped instanceof JsonRpcError)) return undefined;
  const data = mapped.data as Partial<ServiceErrorData> | undefined;
  return typeof data?.retryAfterSeconds === 'number' ? data.retryAfterSeconds : undefined;
}
