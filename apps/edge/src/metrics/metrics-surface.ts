// The metrics surface as the runtime starts it (`metrics.enabled`, `metrics.listen`): serves the runtime's
// EdgeMetrics (built by the runtime, so every surface and the service are instrumented whether or not this
// listener is enabled) and /readyz from the runtime's readiness.
import type { HttpConfig, MetricsConfig } from '@iop/config';
import type { EdgeMetrics } from './edge-metrics.js';
import { startMetricsServer } from './metrics-server.js';

/** What the metrics surface uses of the runtime's core. */
export interface MetricsSurfaceDeps {
  config: { metrics: MetricsConfig; http: HttpConfig };
  metrics: EdgeMetrics;
  /** True once every surface started. */
  ready(): boolean;
}

export function createMetricsSurface() {
  return async (core: MetricsSurfaceDeps) => {
    if (!core.config.metrics.enabled) return undefined;
    const listener = await startMetricsServer({
      listen: core.config.metrics.listen,
      allowedHosts: core.config.http.allowed_hosts,
      metrics: core.metrics,
      readiness: () => {
        const surfaces = core.ready();
        return { ready: surfaces, checks: { config: true, transport: true, surfaces } };
      },
    });
    return { name: 'metrics', address: listener.address, close: () => listener.close() };
  };
}
