// Load generators of the benchmark.
// - `fixedRate`: open loop. Request i is due at start + i/rate whether or not earlier ones have answered, and its
//   latency is counted from when it was due (so a stalled server cannot hide its queueing: no coordinated
//   omission). autocannon's `overallRate` is not used for this because it sends each connection's per-second
//   quota back to back and then idles, which measures bursts, not a steady rate.
// - `maxThroughput`: closed loop with autocannon (N connections each sending the next request when the previous
//   answered), the standard way to find the saturation throughput.
// - `stream`: one SSE request, timing the first token and counting tokens to the end.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const autocannon = require('autocannon');

export function percentile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function summarize(values) {
  const sorted = Float64Array.from(values).sort();
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : Number.NaN,
  };
}

/**
 * Sends `rate` requests per second for `durationMs`, open loop. With `records` (an array), each finished request
 * is also pushed to it as `{ due, sent, headers, end, overhead }`: epoch ms (performance.timeOrigin based, so
 * comparable with other processes' clocks) when it was due, sent, had its response headers and ended, and its
 * x-iop-overhead-ms.
 * @param {{ url: string, body: string, rate: number, durationMs: number, headers?: Record<string,string>,
 *   records?: object[] }} options
 */
export async function fixedRate(options) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  const target = new URL(options.url);
  const total = Math.round((options.rate * options.durationMs) / 1000);
  const latencies = [];
  const statuses = new Map();
  let errors = 0;
  let completed = 0;
  let withOverhead = 0;
  const overheads = [];
  let lateMax = 0;
  const start = performance.now();
  const body = Buffer.from(options.body);
  const origin = performance.timeOrigin;
  const send = (dueAt) =>
    new Promise((resolve) => {
      const sentAt = performance.now();
      let headersAt;
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length, ...options.headers },
        },
        (response) => {
          headersAt = performance.now();
          const overhead = response.headers['x-iop-overhead-ms'];
          if (overhead !== undefined) {
            withOverhead += 1;
            overheads.push(Number(overhead));
          }
          response.on('data', () => undefined);
          response.on('end', () => {
            const endAt = performance.now();
            latencies.push(endAt - dueAt);
            options.records?.push({
              due: origin + dueAt,
              sent: origin + sentAt,
              headers: origin + headersAt,
              end: origin + endAt,
              overhead: overhead === undefined ? undefined : Number(overhead),
            });
            statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
            completed += 1;
            resolve();
          });
        },
      );
      request.on('error', () => {
        errors += 1;
        completed += 1;
        resolve();
      });
      request.end(body);
    });
  const inFlight = [];
  await new Promise((resolve) => {
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + (sent * 1000) / options.rate <= now) {
        const dueAt = start + (sent * 1000) / options.rate;
        lateMax = Math.max(lateMax, now - dueAt);
        inFlight.push(send(dueAt));
        sent += 1;
      }
      if (sent >= total) resolve();
      else setTimeout(tick, Math.max(0, start + (sent * 1000) / options.rate - performance.now()));
    };
    tick();
  });
  await Promise.all(inFlight);
  const elapsedMs = performance.now() - start;
  agent.destroy();
  return {
    ...summarize(latencies),
    sent: total,
    completed,
    errors,
    non2xx: [...statuses].filter(([code]) => code < 200 || code >= 300).reduce((sum, [, n]) => sum + n, 0),
    achievedRate: (completed / elapsedMs) * 1000,
    /** Responses carrying x-iop-overhead-ms (the IOP path must answer every one with it). */
    withOverheadHeader: withOverhead,
    /** p50/p95/p99 of those x-iop-overhead-ms values (count 0 on the direct path). */
    overheadHeader: summarize(overheads),
    generatorLateMaxMs: lateMax,
  };
}

/**
 * Closed-loop saturation with autocannon.
 * @param {{ url: string, body: string, connections: number, durationS: number }} options
 */
export async function maxThroughput(options) {
  const result = await new Promise((resolve, reject) => {
    autocannon(
      {
        url: options.url,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: options.body,
        connections: options.connections,
        duration: options.durationS,
        pipelining: 1,
      },
      (error, value) => (error ? reject(error) : resolve(value)),
    );
  });
  return {
    requestsPerS: result.requests.average,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
  };
}

/**
 * One streamed chat completion: time to the first token, and tokens counted to the end of the stream.
 * Tokens are the backend's `tok ` pieces, counted in the bytes (a relay that merged deltas still counts right).
 * @param {{ url: string, body: string, agent?: http.Agent }} options
 */
export function stream(options) {
  const target = new URL(options.url);
  const body = Buffer.from(options.body);
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let firstTokenAt;
    let tokens = 0;
    let carry = '';
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent: options.agent ?? false,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          reject(new Error(`stream answered ${response.statusCode}`));
          return;
        }
        response.setEncoding('latin1');
        response.on('data', (chunk) => {
          const text = carry + chunk;
          let index = text.indexOf('tok ');
          if (index !== -1 && firstTokenAt === undefined) firstTokenAt = performance.now();
          while (index !== -1) {
            tokens += 1;
            index = text.indexOf('tok ', index + 4);
          }
          carry = text.slice(-3);
        });
        response.on('end', () => {
          const endAt = performance.now();
          if (firstTokenAt === undefined) {
            reject(new Error('stream ended without tokens'));
            return;
          }
          resolve({
            overheadHeader: response.headers['x-iop-overhead-ms'],
            overheadTrailer: response.trailers['x-iop-overhead-ms'],
            ttftMs: firstTokenAt - start,
            tokens,
            totalMs: endAt - start,
            tokensPerS: tokens / ((endAt - firstTokenAt) / 1000),
            startAt: start,
            firstTokenAt,
            endAt,
          });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
