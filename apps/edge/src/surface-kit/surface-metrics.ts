// What an HTTP surface (OpenAI, Anthropic) reports to metrics (admission counters are the service's), as a small
// interface so a surface does not depend on the metrics module (tests pass a recorder; the runtime passes the
// shared EdgeMetrics through `edgeMetricsRecorder`, labelled with the surface's name).
import type { EdgeMetrics } from '../metrics/edge-metrics.js';

export interface SurfaceMetrics {
  /** One answered request: `route` is the route pattern (unknown paths are 'other'). */
  requestFinished(route: string, status: number, seconds: number): void;
  /** Streams: request arrival to the first byte of output. */
  firstToken(seconds: number): void;
  /** The x-iop-overhead-ms figure of a finished run. */
  overhead(seconds: number): void;
}

export const noMetrics: SurfaceMetrics = {
  requestFinished: () => undefined,
  firstToken: () => undefined,
  overhead: () => undefined,
};

/** `surface` labels the figures: `openai`, or `anthropic` for the Messages API mounted on the same listener. */
export function edgeMetricsRecorder(metrics: EdgeMetrics, surface: string): SurfaceMetrics {
  const firstToken = metrics.timeToFirstTokenSeconds.cell(surface);
  const overhead = metrics.overheadSeconds.cell(surface);
  return {
    requestFinished: (route, status, seconds) => {
      metrics.cells.httpRequests.cell(surface, route, String(status)).inc();
      metrics.httpRequestSeconds.cell(surface, route).observe(seconds);
    },
    firstToken: (seconds) => firstToken.observe(seconds),
    overhead: (seconds) => overhead.observe(seconds),
  };
}
