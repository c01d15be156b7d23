// Runtime step "start cluster" (cluster mode only, `cluster.enabled`): NATS state, node ownership and forwarded
// runs (cluster/), below the service — its directory and transport are the service's remote placement, its
// limits the shared limits. The fabric serves runs forwarded here only once the service exists: `serveCluster`
// is that one explicit step, so there is no order to keep. A failure undoes the startup so far.
import type { EdgeConfig } from '@iop/config';
import { CLOSE_REASONS } from '@iop/wire';
import type { Clock } from '../clock.js';
import { startEdgeCluster, type EdgeCluster } from '../cluster/edge-cluster.js';
import type { Logger } from '../logging.js';
import type { EdgeServiceImpl } from '../service/edge-service.js';
import type { RunRegistry } from '../service/run-registry.js';
import type { SqliteRunRecordStore } from '../service/sqlite-run-record-store.js';
import type { EdgeTransport } from '../transport/edge-transport.js';
import type { LocalCore } from './local-core.js';
import { undoStartup } from './shutdown-order.js';

/** Joins the cluster when `cluster.enabled` (undefined otherwise). */
export async function startClusterIfEnabled(
  config: EdgeConfig,
  local: LocalCore,
  transport: EdgeTransport,
  logger: Logger,
  clock: Clock,
): Promise<EdgeCluster | undefined> {
  if (!config.cluster.enabled) return undefined;
  const { registry, pool, events, metrics, governance } = local;
  try {
    return await startEdgeCluster({
      config,
      localNodes: () => registry.list(),
      localProviders: () => pool.snapshot(),
      events,
      connectedNodes: () => registry.links().map((link) => link.nodeId),
      dropNode: (nodeId) =>
        void registry
          .get(nodeId)
          ?.close(CLOSE_REASONS.claimedElsewhere, { goodbye: true })
          .catch(() => undefined),
      logger: logger.child({ component: 'cluster' }),
      clock,
      registry: metrics.registry,
      // API-key limits are counted cluster-wide, each key on its home edge (cluster/cluster-limits.ts).
      governor: governance.governor,
      usage: (query) => governance.usage(query),
    });
  } catch (error) {
    await undoStartup({ local, transport });
    throw error;
  }
}

/** Serves the runs and run lookups other edges forward here, now that the service exists. */
export async function serveCluster(
  cluster: EdgeCluster,
  service: EdgeServiceImpl,
  runRegistry: RunRegistry,
  started: { local: LocalCore; transport: EdgeTransport; runStore: SqliteRunRecordStore },
): Promise<void> {
  try {
    await cluster.serve(service);
    cluster.serveRuns(runRegistry);
  } catch (error) {
    await undoStartup({ ...started, cluster });
    throw error;
  }
}
