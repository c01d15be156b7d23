// The dashboard's HTTP plumbing, shared by its route modules: the security headers every answer carries, and the
// surface kit's JSON writer, SSE writer and bounded JSON body reader with those headers and the dashboard's typed
// errors; the mutation check (JSON only) is the dashboard's own rule.
import type http from 'node:http';
import { readJsonBody } from '../surface-kit/json-body.js';
import { writeJson } from '../surface-kit/json-response.js';
import { SseSink } from '../surface-kit/sse-sink.js';
import { bodyReadFailure } from '../surface-kit/surface-error.js';
import { UiError } from './errors.js';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
});

/** The headers of every dashboard answer besides its content: the security headers, never cached. */
export function uiHeaders(): Record<string, string> {
  return { ...SECURITY_HEADERS, 'cache-control': 'no-store' };
}

/** A whole JSON answer (the kit's writer) with the dashboard's headers. */
export function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  writeJson(response, status, body, Object.entries(uiHeaders()).flat());
}

export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The kit's SSE writer with the dashboard's headers, its head sent at once (a live feed's first event may wait
 * for the overview). `signal` is the client's disconnect signal.
 */
export function startSse(response: http.ServerResponse, signal: AbortSignal): SseSink {
  const sink = new SseSink(response, signal, () => ({
    ...uiHeaders(),
    'content-type': 'text/event-stream; charset=utf-8',
  }));
  sink.start();
  response.flushHeaders();
  return sink;
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

/** The request's JSON object, read by the kit's bounded reader; its failures as the dashboard's errors. */
export async function readJson(
  request: http.IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await readJsonBody(request, maxBytes);
  } catch (error) {
    const failure = bodyReadFailure(error);
    if (failure?.code === 'request_too_large') {
      throw new UiError('body_too_large', `the request body exceeds ${maxBytes} bytes`, { cause: error });
    }
    if (failure?.code === 'invalid_json') {
      throw new UiError('invalid_json', 'the request body is not JSON', { cause: error });
    }
    throw new UiError('invalid_request', failure?.message ?? String(error), { cause: error });
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
