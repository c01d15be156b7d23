// One HTTP exchange with an inference server, from the request to the last body byte. It owns a Cancellation
// (an AbortSignal without EventTarget's cost, see cancellation.ts) linked to the caller's signal (cancel, run deadline, node shutdown) and to `cancel()` (the
// adapter closing: InflightSet), and an inactivity timer
// (request_timeout_ms of silence before the headers or between body chunks aborts with `upstream_timeout`, so a
// long generation that keeps streaming is never cut). Every failure leaves as an UpstreamError or
// UpstreamCancelled, and `dispose()` (call it in `finally`) aborts whatever is still open.
//
// `backendMs` is the time spent waiting on the backend: for the response headers and for each next body chunk.
// Time the node spends relaying what it already received is not in it, so the edge's overhead figure
// (its own time minus backendMs) stays honest when the node, not the backend, is the slow part.
import type { Clock, ClockTimer } from '@iop/clock';
import { Cancellation, type AbortSignalLike } from '../cancellation.js';
import { errorMessageFromBody } from './error-body.js';
import { describeFailure } from './failure-cause.js';
import type { HttpClient, HttpClientResponse } from './http-client.js';
import type { Cancellable } from './inflight-set.js';
import { UpstreamCancelled, UpstreamError, reasonText } from './upstream-error.js';

export interface UpstreamExchangeOptions {
  http: HttpClient;
  now: () => number;
  /** Runs the inactivity timer. */
  clock: Clock;
  signal: AbortSignalLike;
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

export class UpstreamExchange implements Cancellable {
  private readonly options: UpstreamExchangeOptions;
  private readonly cancellation = new Cancellation();
  private readonly onCallerAbort: () => void;
  /** The caller aborted or `cancel()` was called (not a timeout or dispose): the run is cancelled. */
  private cancelledWith: { reason: unknown } | undefined;
  private timer: ClockTimer | undefined;
  private timedOut = false;
  /** Sum of the finished waits on the backend. */
  private waitedMs = 0;
  /** Start of the wait in progress, if one is. */
  private waitingSince: number | undefined;
  private finished = false;
  /** The response body was read to its end: nothing is left open to abort. */
  private bodyDone = false;
  private url = '';

  constructor(options: UpstreamExchangeOptions) {
    this.options = options;
    this.onCallerAbort = () => this.cancel(options.signal.reason);
    if (options.signal.aborted) this.cancel(options.signal.reason);
    else options.signal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Cancels the exchange (the caller's abort does the same): whatever is open is aborted with `reason`. */
  cancel(reason: unknown): void {
    if (this.cancelledWith) return;
    this.cancelledWith = { reason };
    this.cancellation.abort(reason);
  }

  /** The caller aborted or the exchange was cancelled. */
  get cancelled(): boolean {
    return this.cancelledWith !== undefined;
  }

  /** Why it was cancelled, readable ('cancelled' when no reason was given). */
  get cancelReason(): string {
    return reasonText(this.cancelledWith?.reason);
  }

  /**
   * Time spent waiting on the backend so far (or until `finish()`), in milliseconds: the waits for the
   * response headers and for each body chunk, not the node's own work in between.
   */
  get backendMs(): number {
    if (this.waitingSince === undefined || this.finished) return this.waitedMs;
    return this.waitedMs + (this.options.now() - this.waitingSince);
  }

  /** Sends the request and returns a 2xx response; other statuses throw `upstream_http_<status>`. */
  async send(url: string, init: UpstreamRequestInit): Promise<HttpClientResponse> {
    this.url = url;
    this.checkCancelled();
    this.touch();
    const headers: Record<string, string> = { ...init.headers };
    let body: string | undefined;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] = 'application/json';
    }
    let response: HttpClientResponse;
    this.startWait();
    try {
      response = await this.options.http.request(url, {
        method: init.method,
        headers,
        body,
        signal: this.cancellation,
      });
    } catch (error) {
      throw this.classify(error, 'connect');
    } finally {
      this.endWait();
    }
    if (response.status >= 200 && response.status < 300) return response;
    const parts: Uint8Array[] = [];
    try {
      for await (const chunk of this.chunks(response)) parts.push(chunk);
    } catch (error) {
      throw this.classify(error, 'body');
    }
    const text = Buffer.concat(parts).toString('utf8');
    const fallback = response.statusText
      ? `HTTP ${response.status} ${response.statusText}`
      : `HTTP ${response.status}`;
    throw UpstreamError.http(response.status, errorMessageFromBody(text, fallback));
  }

  /** The response body chunk by chunk; each chunk re-arms the inactivity timer. */
  async *chunks(response: HttpClientResponse): AsyncIterable<Uint8Array> {
    const iterator = response.body[Symbol.asyncIterator]();
    let done = false;
    try {
      while (!done) {
        let result: IteratorResult<Uint8Array>;
        this.startWait();
        try {
          result = await iterator.next();
        } catch (error) {
          throw this.classify(error, 'body');
        } finally {
          this.endWait();
        }
        this.touch();
        done = result.done === true;
        if (done) this.bodyDone = true;
        else yield result.value;
      }
    } catch (error) {
      // A broken body: nothing more will come that is worth reading.
      done = true;
      response.cancel();
      throw error;
    } finally {
      if (!done) {
        if (this.cancellation.aborted) {
          // Cancelled: close the connection at once so the backend stops generating.
          response.cancel();
        } else {
          // The consumer has what it needs (e.g. [DONE]): let the rest drain so the connection is reused.
          this.bodyDone = true;
          response.discard();
        }
      }
    }
  }

  /** Reads the whole body as JSON (lifecycle calls, model lists). */
  async json(response: HttpClientResponse): Promise<unknown> {
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
    this.endWait();
    this.finished = true;
    this.clearTimer();
  }

  /** Releases the timer and the caller-signal listener and aborts the request if it is still open. Idempotent. */
  dispose(): void {
    this.finish();
    this.options.signal.removeEventListener('abort', this.onCallerAbort);
    // Aborting a finished exchange is pure cost (an Error with its stack, undici's cancel path on every run).
    if (!this.bodyDone && !this.cancellation.aborted) {
      this.cancellation.abort(new Error('upstream exchange disposed'));
    }
  }

  /** Turns any failure into UpstreamCancelled / UpstreamError. */
  classify(error: unknown, phase: Phase): UpstreamError | UpstreamCancelled {
    if (error instanceof UpstreamError || error instanceof UpstreamCancelled) return error;
    if (this.cancelledWith) return new UpstreamCancelled(this.cancelReason);
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
        `cannot reach ${originOf(this.url)}: ${describeFailure(error)}`,
        {
          retryable: true,
          cause: error,
        },
      );
    }
    return new UpstreamError('upstream_error', `upstream connection lost: ${describeFailure(error)}`, {
      retryable: true,
      cause: error,
    });
  }

  private startWait(): void {
    if (!this.finished) this.waitingSince = this.options.now();
  }

  private endWait(): void {
    if (this.waitingSince === undefined) return;
    this.waitedMs += this.options.now() - this.waitingSince;
    this.waitingSince = undefined;
  }

  private checkCancelled(): void {
    if (this.cancelledWith) throw new UpstreamCancelled(this.cancelReason);
  }

  private touch(): void {
    if (this.options.idleTimeoutMs <= 0 || this.finished) return;
    // Re-armed on every body chunk: refreshing the one timer is much cheaper than a new one per chunk.
    if (this.timer !== undefined) {
      this.timer.refresh();
      return;
    }
    this.timer = this.options.clock.setTimeout(() => {
      this.timedOut = true;
      this.cancellation.abort(new Error('upstream inactivity timeout'));
    }, this.options.idleTimeoutMs);
  }

  private clearTimer(): void {
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
