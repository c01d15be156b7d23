// Runtime step "build the service": one run supervisor per run over the local pool (and, in cluster mode, the
// remote placement and the shared limits), with admission counted on the edge's metrics.
import type { EdgeConfig } from '@iop/config';
import type { Clock } from '../clock.js';
import type { EdgeCluster } from '../cluster/edge-cluster.js';
import type { RunSecrets } from '../governance/run-secrets.js';
import type { Logger } from '../logging.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import { createModelAccessGrant } from '../placement/model-access.js';
import { createEdgeService, type AdmissionMetrics, type EdgeServiceImpl } from '../service/edge-service.js';
import type { RunRegistry } from '../service/run-registry.js';
import type { LocalCore } from './local-core.js';

export function buildEdgeService(
  config: EdgeConfig,
  local: LocalCore,
  runRegistry: RunRegistry,
  runSecrets: RunSecrets,
  cluster: EdgeCluster | undefined,
  logger: Logger,
  clock: Clock,
): EdgeServiceImpl {
  const { registry, pool, events, metrics, circuits, governance, tracing, routing } = local;
  return createEdgeService({
    runRegistry,
    registry,
    pool,
    events,
    logger: logger.child({ component: 'service' }),
    clock,
    metrics: admissionMetrics(metrics),
    retryAttempts: () => routing.current.retry.max_attempts,
    outcomes: circuits,
    modelAccess: createModelAccessGrant(config.nodes, runSecrets),
    governor: governance.governor,
    reserveMaxTokens: config.usage.reserve_max_tokens,
    tracing,
    edgeId: config.edge.id,
    ...(cluster ? { remote: cluster.remote } : {}),
    ...(cluster?.limits ? { sharedLimits: cluster.limits } : {}),
  });
}

/** Admission counters on the shared metrics (explicit routes without a provider count no provider dispatch). */
function admissionMetrics(metrics: EdgeMetrics): AdmissionMetrics {
  return {
    dispatched: (surface, providerId, nodeId) => {
      metrics.cells.runsAdmitted.cell(surface).inc();
      if (providerId !== undefined) metrics.cells.providerDispatches.cell(providerId, nodeId).inc();
    },
    rejected: (surface, model, reason) => {
      metrics.runsRejected.inc({ surface, reason });
      if (model !== '') metrics.providerRejections.inc({ model, reason });
    },
    retried: (surface, reason) => metrics.runRetries.inc({ surface, reason }),
    childEnded: (result) => metrics.childRuns.inc({ result }),
    childQueued: (model, seconds) => metrics.childQueueWaitSeconds.observe({ model }, seconds),
  };
}
