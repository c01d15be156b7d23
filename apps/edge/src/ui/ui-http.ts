// The dashboard's HTTP plumbing, shared by its route modules: the security headers every answer carries, JSON and
// server-sent-event responses, and the checks and readers of a JSON request body (bounded, typed errors).
import type http from 'node:http';
import { UiError } from './errors.js';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
});

export function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}

export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function startSse(response: http.ServerResponse): void {
  response.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
}

/**
 * Mutations must be JSON: a cross-site form cannot send that content type without a preflight. (A foreign Origin
 * never gets here: the listener's guard compares it with the listener's own names, not with the Host the page
 * chose.)
 */
export function checkMutation(request: http.IncomingMessage): void {
  const type = request.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('application/json')) {
    throw new UiError('unsupported_media_type', 'send the request body as application/json');
  }
}

export async function readJson(
  request: http.IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const declared = Number(request.headers['content-length'] ?? '0');
  if (declared > maxBytes) throw new UiError('body_too_large', `the request body exceeds ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new UiError('body_too_large', `the request body exceeds ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let value: unknown;
  try {
    value = text === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new UiError('invalid_json', 'the request body is not JSON', { cause: error });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UiError('invalid_request', 'the request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

export function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') {
    throw new UiError('invalid_request', `${field} is required (a non-empty string)`);
  }
  return value;
}

export function optionalString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new UiError('invalid_request', `${field} must be a string`);
  return value;
}
