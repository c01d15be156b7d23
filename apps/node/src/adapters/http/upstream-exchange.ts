// One HTTP exchange with an inference server, from the request to the last body byte. It owns an
// AbortController linked to the caller's signal (cancel, run deadline, node shutdown) and an inactivity timer
// (request_timeout_ms of silence before the headers or between body chunks aborts with `upstream_timeout`, so a
// long generation that keeps streaming is never cut). Every failure leaves as an UpstreamError or
// UpstreamCancelled, and `dispose()` (call it in `finally`) aborts whatever is still open.
import { errorMessageFromBody } from './error-body.js';
import { UpstreamCancelled, UpstreamError, abortReason } from './upstream-error.js';

export interface UpstreamExchangeOptions {
  fetch: typeof fetch;
  now: () => number;
  signal: AbortSignal;
  /** Silence allowed before the response headers and between body chunks. */
  idleTimeoutMs: number;
}

export interface UpstreamRequestInit {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
}

/** Where a failure happened decides its code: before a response it is a connection problem. */
type Phase = 'connect' | 'body';

/** The origin of a URL (never its credentials or query) for error messages. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the configured base_url';
  }
}

/**
 * The innermost useful description of a fetch error (`connect ECONNREFUSED 127.0.0.1:1`, `other side closed`).
 * Duck-typed on purpose: fetch's errors may come from another realm (test VMs), where `instanceof Error` fails.
 */
function describeCause(error: unknown): string {
  let current: unknown = error;
  let description = String(error);
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const { message, code, cause } = current as { message?: unknown; code?: unknown; cause?: unknown };
    const text = typeof message === 'string' ? message : '';
    if (typeof code === 'string' && code !== '')
      description = text.includes(code) ? text : `${code} ${text}`.trim();
    else if (text !== '') description = text;
    current = cause;
  }
  return description;
}

export class UpstreamExchange {
  private readonly options: UpstreamExchangeOptions;
  private readonly controller = new AbortController();
  private readonly onCallerAbort: () => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;
  private startedAt: number | undefined;
  private finishedAt: number | undefined;
  /** The response body was read to its end: nothing is left open to abort. */
  private bodyDone = false;
  private url = '';

  constructor(options: UpstreamExchangeOptions) {
    this.options = options;
    this.onCallerAbort = () => this.controller.abort(options.signal.reason);
    if (options.signal.aborted) this.controller.abort(options.signal.reason);
    else options.signal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Wall time of the exchange so far (or until `finish()`), in milliseconds. */
  get backendMs(): number {
    if (this.startedAt === undefined) return 0;
    return (this.finishedAt ?? this.options.now()) - this.startedAt;
  }

  /** Sends the request and returns a 2xx response; other statuses throw `upstream_http_<status>`. */
  async send(url: string, init: UpstreamRequestInit): Promise<Response> {
    this.url = url;
    this.startedAt ??= this.options.now();
    this.checkCancelled();
    this.touch();
    const headers: Record<string, string> = { ...init.headers };
    let body: string | undefined;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] = 'application/json';
    }
    let response: Response;
    try {
      response = await this.options.fetch(url, {
        method: init.method,
        headers,
        body,
        signal: this.controller.signal,
      });
    } catch (error) {
      throw this.classify(error, 'connect');
    }
    if (response.ok) return response;
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw this.classify(error, 'body');
    }
    const fallback = response.statusText
      ? `HTTP ${response.status} ${response.statusText}`
      : `HTTP ${response.status}`;
    throw UpstreamError.http(response.status, errorMessageFromBody(text, fallback));
  }

  /** The response body chunk by chunk; each chunk re-arms the inactivity timer. */
  async *chunks(response: Response): AsyncIterable<Uint8Array> {
    if (!response.body) return;
    const reader = response.body.getReader();
    let done = false;
    try {
      while (!done) {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await reader.read();
        } catch (error) {
          throw this.classify(error, 'body');
        }
        this.touch();
        done = result.done;
        if (done) this.bodyDone = true;
        if (!result.done) yield result.value;
      }
    } finally {
      // A consumer that stops early (or a failure) must not leave the connection streaming.
      if (!done) reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  }

  /** Reads the whole body as JSON (lifecycle calls, model lists). */
  async json(response: Response): Promise<unknown> {
    const parts: Uint8Array[] = [];
    for await (const chunk of this.chunks(response)) parts.push(chunk);
    const text = Buffer.concat(parts).toString('utf8');
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new UpstreamError('upstream_error', `invalid JSON from upstream: ${text.slice(0, 200)}`, {
        retryable: false,
        cause: error,
      });
    }
  }

  /** Stops the clock: the upstream part of the work is over. */
  finish(): void {
    this.finishedAt ??= this.options.now();
    this.clearTimer();
  }

  /** Releases the timer and the caller-signal listener and aborts the request if it is still open. Idempotent. */
  dispose(): void {
    this.finish();
    this.options.signal.removeEventListener('abort', this.onCallerAbort);
    // Aborting a finished exchange is pure cost (an Error with its stack, undici's cancel path on every run).
    if (!this.bodyDone && !this.controller.signal.aborted) {
      this.controller.abort(new Error('upstream exchange disposed'));
    }
  }

  /** Turns any failure into UpstreamCancelled / UpstreamError. */
  classify(error: unknown, phase: Phase): UpstreamError | UpstreamCancelled {
    if (error instanceof UpstreamError || error instanceof UpstreamCancelled) return error;
    if (this.options.signal.aborted) return new UpstreamCancelled(abortReason(this.options.signal));
    if (this.timedOut) {
      return new UpstreamError(
        'upstream_timeout',
        `no data from ${originOf(this.url)} for ${this.options.idleTimeoutMs} ms (request_timeout_ms)`,
        { retryable: true, cause: error },
      );
    }
    if (phase === 'connect') {
      return new UpstreamError(
        'upstream_unreachable',
        `cannot reach ${originOf(this.url)}: ${describeCause(error)}`,
        {
          retryable: true,
          cause: error,
        },
      );
    }
    return new UpstreamError('upstream_error', `upstream connection lost: ${describeCause(error)}`, {
      retryable: true,
      cause: error,
    });
  }

  private checkCancelled(): void {
    if (this.options.signal.aborted) throw new UpstreamCancelled(abortReason(this.options.signal));
  }

  private touch(): void {
    this.clearTimer();
    if (this.options.idleTimeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Error('upstream inactivity timeout'));
    }, this.options.idleTimeoutMs);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
