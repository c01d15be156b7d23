// JSON-RPC 2.0 envelope handling for the A2A surface: request validation and the one place where errors become
// JSON-RPC error objects.

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
