// Request metrics of an HTTP surface as one express middleware: on every answered request it counts
// `iop_http_requests_total{surface,route,status}` and observes `iop_http_request_duration_seconds` (to the end of
// the response, whole stream included). Streaming handlers call `markFirstToken(response)` when the first
// generated token leaves, which observes `iop_time_to_first_token_seconds` once per response. Route labels come
// from a bounded function the surface provides (never the raw URL), so unknown paths cannot grow the label set.
import type { NextFunction, Request, Response } from 'express';
import type { EdgeMetrics } from './edge-metrics.js';

/** What a surface reports; a small interface so tests pass a recorder and surfaces need no registry. */
export interface HttpMetricsRecorder {
  requestFinished(route: string, status: number, seconds: number): void;
  firstToken(seconds: number): void;
}

export const noHttpMetrics: HttpMetricsRecorder = {
  requestFinished: () => undefined,
  firstToken: () => undefined,
};

/** Records into the shared EdgeMetrics under `surface`. */
export function edgeHttpMetrics(metrics: EdgeMetrics, surface: string): HttpMetricsRecorder {
  return {
    requestFinished: (route, status, seconds) => {
      metrics.cells.httpRequests.cell(surface, route, String(status)).inc();
      metrics.httpRequestSeconds.observe({ surface, route }, seconds);
    },
    firstToken: (seconds) => metrics.timeToFirstTokenSeconds.observe({ surface }, seconds),
  };
}

interface MetricsLocals {
  iopMetrics?: { arrivedAt: number; recorder: HttpMetricsRecorder; firstTokenSeen: boolean };
}

/**
 * The middleware. `routeOf` runs when the response closes (after routing), so it may read what handlers left in
 * `response.locals`; it must return one of a fixed set of labels.
 */
export function httpMetricsMiddleware(
  recorder: HttpMetricsRecorder,
  routeOf: (request: Request, response: Response) => string,
): (request: Request, response: Response, next: NextFunction) => void {
  return (request, response, next) => {
    const arrivedAt = performance.now();
    (response.locals as MetricsLocals).iopMetrics = { arrivedAt, recorder, firstTokenSeen: false };
    response.once('close', () => {
      recorder.requestFinished(
        routeOf(request, response),
        response.statusCode,
        (performance.now() - arrivedAt) / 1000,
      );
    });
    next();
  };
}

/** Observes the time to first token of this response (only the first call counts). */
export function markFirstToken(response: Response): void {
  const state = (response.locals as MetricsLocals).iopMetrics;
  if (!state || state.firstTokenSeen) return;
  state.firstTokenSeen = true;
  state.recorder.firstToken((performance.now() - state.arrivedAt) / 1000);
}
