// Readers of JSON-RPC params shared by the A2A methods of both protocol versions: each throws invalid params
// (-32602) naming the field.
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';

/** What an A2A contextId may look like: it names a session and can reach a CLI's argv as `{iop_session}`. */
const CONTEXT_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

export function checkContextId(params: Record<string, unknown>): void {
  const message = params['message'];
  if (typeof message !== 'object' || message === null) return;
  const contextId = (message as Record<string, unknown>)['contextId'];
  if (contextId === undefined || contextId === null) return;
  if (typeof contextId !== 'string' || !CONTEXT_ID_PATTERN.test(contextId)) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.invalidParams,
      'params.message.contextId must be 1-128 letters, digits, ".", "_" or "-"',
    );
  }
}

export function readObject(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be an object`);
  }
  return value as Record<string, unknown>;
}

export function readBoolean(value: unknown, where: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean')
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be a boolean`);
  return value;
}

export function readCount(value: unknown, where: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be a non-negative integer`);
  }
  return value;
}

export function readTaskId(params: Record<string, unknown>, field = 'id'): string {
  const id = params[field];
  if (typeof id !== 'string' || id === '') {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `params.${field} must be a non-empty string`);
  }
  return id;
}

export function readString(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be a string`);
  }
  return value;
}
