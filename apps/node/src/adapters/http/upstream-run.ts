// The run skeleton both HTTP adapters share: `start` first, the backend's parts, then exactly one terminal part.
// Failures become `error` parts (never thrown), an abort becomes `cancelled`, and the upstream request is
// aborted in `finally` whatever way the consumer leaves (cancel, error, or simply stopping iteration).
import type { RunEventPart, RunRequest } from '@iop/wire';

import type { AbortSignalLike } from '../cancellation.js';
import type { InflightSet } from './inflight-set.js';
import type { UpstreamDeps } from './upstream-deps.js';
import { fetchHttpClient } from './http-client.js';
import { UpstreamExchange } from './upstream-exchange.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

/** Parts a backend stream yields; it returns the finish reason when the upstream completed normally. */
export type BackendStream = AsyncGenerator<RunEventPart, string, undefined>;

/**
 * What every run of one adapter instance shares, built once with the adapter: a run allocates no options object
 * and no closure of its own, only the exchange and the generators.
 */
export interface UpstreamRunner<Context> {
  adapterName: string;
  deps: UpstreamDeps;
  inflight: InflightSet;
  idleTimeoutMs: number;
  /** Sends the run's request through the exchange and yields the parts of its answer. */
  stream(exchange: UpstreamExchange, request: RunRequest, context: Context): BackendStream;
}

/** One run: `context` is handed to the runner's `stream` as it is (the adapter's per-run options). */
export async function* runUpstream<Context>(
  runner: UpstreamRunner<Context>,
  request: RunRequest,
  signal: AbortSignalLike,
  context: Context,
): AsyncGenerator<RunEventPart, void, undefined> {
  const { deps } = runner;
  yield { type: 'start', sessionId: request.sessionId, adapter: runner.adapterName, target: request.target };
  const exchange = new UpstreamExchange({
    http: deps.http ?? fetchHttpClient(deps.fetch),
    now: deps.now,
    clock: deps.clock,
    signal,
    idleTimeoutMs: runner.idleTimeoutMs,
  });
  // close() of the adapter cancels it like the caller's abort.
  runner.inflight.add(exchange);
  let produced = false;
  let parts: BackendStream | undefined;
  let partsDone = false;
  try {
    if (runner.inflight.closed) {
      yield {
        type: 'error',
        code: 'adapter_closed',
        message: `adapter ${runner.adapterName} is closed`,
        retryable: true,
        backendMs: 0,
      };
      return;
    }
    parts = runner.stream(exchange, request, context);
    let finishReason: string | undefined;
    while (finishReason === undefined && !exchange.cancelled) {
      const next = await parts.next();
      if (next.done) {
        partsDone = true;
        finishReason = next.value;
      } else {
        produced = true;
        yield next.value;
      }
    }
    if (finishReason === undefined) {
      // Aborted between two parts: stop the backend stream (its finally closes the response body).
      partsDone = true;
      await parts.return('cancelled');
      yield { type: 'cancelled', reason: exchange.cancelReason };
      return;
    }
    exchange.finish();
    yield { type: 'complete', detail: 'stop', finishReason, backendMs: exchange.backendMs };
  } catch (error) {
    // A backend stream that threw has finished.
    partsDone = true;
    exchange.finish();
    if (error instanceof UpstreamCancelled || exchange.cancelled) {
      yield { type: 'cancelled', reason: exchange.cancelReason };
      return;
    }
    const failure =
      error instanceof UpstreamError
        ? error
        : new UpstreamError('upstream_error', error instanceof Error ? error.message : String(error), {
            retryable: false,
            cause: error,
          });
    deps.logger.warn(
      { adapter: runner.adapterName, runId: request.runId, code: failure.code, error: failure.message },
      'upstream run failed',
    );
    yield {
      type: 'error',
      code: failure.code,
      message: failure.message,
      // Once output reached the client a retry elsewhere would duplicate it.
      retryable: failure.retryable && !produced,
      backendMs: exchange.backendMs,
    };
  } finally {
    exchange.dispose();
    // The consumer left while a part was out (break / return()): run the backend stream's own cleanup too.
    if (parts && !partsDone) await parts.return('abandoned').catch(() => undefined);
    runner.inflight.release(exchange);
  }
}
