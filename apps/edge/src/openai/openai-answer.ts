// How the OpenAI surface writes an answer's head: the timing and run headers (agent-contract/outer/
// openai-compatible-api.md). `x-iop-overhead-ms` is the time spent in the edge and node excluding the backend's
// own time and the provider-queue wait (reported separately as `x-iop-queue-ms`).
import type { ServerResponse } from 'node:http';
import { writeJson } from '../surface-kit/json-response.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import type { StartedRun } from '../surface-kit/run-starter.js';

export const OVERHEAD_HEADER = 'x-iop-overhead-ms';
/** Dispatches the run took (2 or more after a retry before the first output). */
const ATTEMPTS_HEADER = 'x-iop-attempts';

export function formatMs(value: number): string {
  return value.toFixed(2);
}

/** The edge's time so far as the flat header list an answer without a run carries. */
export function elapsedHeader(context: RequestContext): (string | number)[] {
  return [OVERHEAD_HEADER, formatMs(performance.now() - context.arrivedAt)];
}

/**
 * Writes a whole JSON answer: the headers set so far plus `headers` (flat name/value list; default: the edge's
 * time so far as `x-iop-overhead-ms`), then the body (surface-kit/json-response.ts).
 */
export function sendJson(
  context: RequestContext,
  status: number,
  body: unknown,
  headers?: (string | number)[],
): void {
  writeJson(context.response, status, body, headers ?? elapsedHeader(context));
}

/**
 * The run's headers as they are now: a retry before the first output changes the provider, the queue wait and the
 * attempts, so a stream sets them again when its head is sent (with the first output).
 */
export function setRunHeaders(response: ServerResponse, run: StartedRun): void {
  response.setHeader('x-iop-run-id', run.handle.runId);
  response.setHeader('x-iop-queue-ms', formatMs(run.handle.queueMs));
  response.setHeader(ATTEMPTS_HEADER, String(run.handle.attempts ?? 1));
  if (run.handle.providerId) response.setHeader('x-iop-provider', run.handle.providerId);
}

/** The run's headers and its overhead figure as a flat name/value list (for `sendJson`). */
export function runHeaders(run: StartedRun, overheadMs: number): (string | number)[] {
  const list: (string | number)[] = [
    'x-iop-run-id',
    run.handle.runId,
    'x-iop-queue-ms',
    formatMs(run.handle.queueMs),
    OVERHEAD_HEADER,
    formatMs(overheadMs),
    ATTEMPTS_HEADER,
    String(run.handle.attempts ?? 1),
  ];
  if (run.handle.providerId) list.push('x-iop-provider', run.handle.providerId);
  return list;
}

/** Edge time before the run was submitted (excluding queue wait), plus the run's own overhead when complete. */
export function overheadOf(context: RequestContext, run: StartedRun, complete: boolean): number {
  const beforeSubmit = Math.max(0, run.handle.submittedAt - context.arrivedAt - run.handle.queueMs);
  const runOverhead = complete ? (run.handle.overheadMs() ?? 0) : 0;
  return beforeSubmit + runOverhead;
}
