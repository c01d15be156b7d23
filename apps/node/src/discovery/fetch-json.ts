// One bounded HTTP GET for discovery: a deadline covering connect, headers and body (a server that accepts and
// never answers costs at most `timeoutMs`), a cap on the body, and no exceptions — a probe either gets JSON or
// learns nothing. It goes through the node's HttpClient (its own HTTP/1.1 client in production), like the
// adapters, so discovery reaches a backend whenever the adapters can. Why it learned nothing goes to
// `onFailure` (a cause code and words), for the caller to log; a probe the caller aborted reports nothing.
import { systemClock } from '@iop/clock';
import type { HealthCause } from '../adapters/adapter.js';
import { describeFailure, failureCause } from '../adapters/http/failure-cause.js';
import type { HttpClient, HttpClientResponse } from '../adapters/http/http-client.js';

export const PROBE_MAX_BODY_BYTES = 1024 * 1024;

/** Why a probe request got no JSON. */
export interface ProbeFailure {
  url: string;
  cause: HealthCause;
  detail: string;
}

export interface FetchJsonOptions {
  timeoutMs: number;
  signal: AbortSignal;
  onFailure?: (failure: ProbeFailure) => void;
}

class ProbeRequestFailed extends Error {
  constructor(
    readonly reason: HealthCause,
    message: string,
  ) {
    super(message);
  }
}

const TIMED_OUT = Symbol('timed out');

export async function fetchJson(http: HttpClient, url: string, options: FetchJsonOptions): Promise<unknown> {
  if (options.signal.aborted) return undefined;
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal.reason);
  options.signal.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = systemClock.setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('probe timed out'));
  }, options.timeoutMs);
  // The deadline also settles a client that ignores the signal.
  const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
    controller.signal.addEventListener('abort', () => resolve(TIMED_OUT), { once: true });
  });
  const report = (cause: HealthCause, detail: string) => {
    if (!options.signal.aborted) options.onFailure?.({ url, cause, detail });
  };
  try {
    const result = await Promise.race([read(http, url, controller.signal), deadline]);
    if (result === TIMED_OUT) {
      if (timedOut) report('timeout', `no answer within ${options.timeoutMs} ms`);
      return undefined;
    }
    return result;
  } catch (error) {
    if (timedOut) report('timeout', `no answer within ${options.timeoutMs} ms`);
    else if (error instanceof ProbeRequestFailed) report(error.reason, error.message);
    else report(failureCause(error), describeFailure(error));
    return undefined;
  } finally {
    systemClock.clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    if (!controller.signal.aborted) controller.abort(new Error('probe finished'));
  }
}

async function read(http: HttpClient, url: string, signal: AbortSignal): Promise<unknown> {
  const response: HttpClientResponse = await http.request(url, {
    method: 'GET',
    headers: { accept: 'application/json' },
    signal,
  });
  if (response.status < 200 || response.status >= 300) {
    response.cancel();
    throw new ProbeRequestFailed(
      'http_status',
      `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
    );
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  let complete = false;
  try {
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > PROBE_MAX_BODY_BYTES) {
        throw new ProbeRequestFailed('invalid_response', `body over ${PROBE_MAX_BODY_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    complete = true;
  } finally {
    if (!complete) response.cancel();
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new ProbeRequestFailed('invalid_response', 'the answer is not JSON');
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `items[].<key>` strings of a JSON list, skipping anything malformed. */
export function stringsOf(items: unknown, key: string): string[] {
  if (!Array.isArray(items)) return [];
  const out: string[] = [];
  for (const item of items) {
    const value = isRecord(item) ? item[key] : undefined;
    if (typeof value === 'string' && value) out.push(value);
  }
  return out;
}
