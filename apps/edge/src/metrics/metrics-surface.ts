// The metrics surface as the runtime starts it (`metrics.enabled`, `metrics.listen`). It starts first so the
// surfaces after it can find the shared EdgeMetrics in the runtime's extras and instrument themselves.
import { RUNTIME_EXTRAS, type FrameErrorSubscribe } from '../edge-runtime.js';
import { sharedProviderPool } from '../pool/shared-pool.js';
import type { SurfaceContext, SurfaceFactory } from '../surface.js';
import { EdgeMetrics } from './edge-metrics.js';
import { startMetricsServer } from './metrics-server.js';

/** Key of the shared EdgeMetrics in the runtime's extras map. */
export const EDGE_METRICS_KEY = 'edgeMetrics';

/** The runtime's EdgeMetrics, created on first use (also when the metrics listener is disabled). */
export function sharedEdgeMetrics(context: SurfaceContext): EdgeMetrics {
  const existing = context.extras.get(EDGE_METRICS_KEY);
  if (existing instanceof EdgeMetrics) return existing;
  const metrics = new EdgeMetrics({
    processMetrics: true,
    connectedNodes: () => context.service.listNodes().length,
    providerSnapshot: () =>
      sharedProviderPool(context)
        .snapshot()
        .map((provider) => ({
          providerId: provider.providerId,
          nodeId: provider.nodeId,
          capacity: provider.capacity,
          inFlight: provider.inFlight,
          queued: provider.queued,
        })),
  });
  // The subscription ends when the runtime closes its event bus.
  metrics.followEvents(context.events);
  const subscribeFrameErrors = context.extras.get(RUNTIME_EXTRAS.frameErrors) as
    FrameErrorSubscribe | undefined;
  subscribeFrameErrors?.((code) => metrics.frameErrors.inc({ code }));
  context.extras.set(EDGE_METRICS_KEY, metrics);
  return metrics;
}

export function createMetricsSurface(): SurfaceFactory {
  return async (context) => {
    const metrics = sharedEdgeMetrics(context);
    if (!context.config.metrics.enabled) return undefined;
    const listener = await startMetricsServer({
      listen: context.config.metrics.listen,
      metrics,
      readiness: () => {
        const surfaces = context.extras.get(RUNTIME_EXTRAS.ready) === true;
        return { ready: surfaces, checks: { config: true, transport: true, surfaces } };
      },
    });
    return { name: 'metrics', address: listener.address, close: () => listener.close() };
  };
}
