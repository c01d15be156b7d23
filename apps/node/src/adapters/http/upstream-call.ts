// Runs one non-run upstream call (a command or a health probe) inside a tracked UpstreamExchange, so
// `close()` aborts it and the exchange is always disposed.
import type { InflightSet } from './inflight-set.js';
import type { UpstreamDeps } from './upstream-deps.js';
import { fetchHttpClient } from './http-client.js';
import { UpstreamExchange } from './upstream-exchange.js';

interface UpstreamCallOptions {
  deps: UpstreamDeps;
  inflight: InflightSet;
  signal: AbortSignal;
  idleTimeoutMs: number;
}

async function callUpstream<T>(
  options: UpstreamCallOptions,
  call: (exchange: UpstreamExchange) => Promise<T>,
): Promise<T> {
  const exchange = new UpstreamExchange({
    http: options.deps.http ?? fetchHttpClient(options.deps.fetch),
    now: options.deps.now,
    clock: options.deps.clock,
    signal: options.signal,
    idleTimeoutMs: options.idleTimeoutMs,
  });
  options.inflight.add(exchange);
  try {
    return await call(exchange);
  } finally {
    exchange.dispose();
    options.inflight.release(exchange);
  }
}

/** One tracked call of an adapter, bounded by `idleTimeoutMs` of silence. */
export type UpstreamCaller = <T>(
  signal: AbortSignal,
  idleTimeoutMs: number,
  call: (exchange: UpstreamExchange) => Promise<T>,
) => Promise<T>;

/** The calls of one adapter instance: each tracked in its in-flight set, so the adapter's close() aborts it. */
export function upstreamCaller(deps: UpstreamDeps, inflight: InflightSet): UpstreamCaller {
  return (signal, idleTimeoutMs, call) => callUpstream({ deps, inflight, signal, idleTimeoutMs }, call);
}
