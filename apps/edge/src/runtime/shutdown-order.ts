// The runtime's shutdown order, in one place. A full stop goes from the outside in: surfaces stop taking requests,
// config refresh stops, the run registry refuses new runs, the cluster leaves, the service refuses new work, the
// pool refuses its waiters, nodes get Goodbye (which ends their in-flight runs), then the stores close (after the
// transport: runs ended by the Goodbye are recorded first), tracing exports its last spans and the bus closes its
// subscriptions. A failed startup undoes what was started so far, in the same order.
import type { EdgeCluster } from '../cluster/edge-cluster.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { RunRegistry } from '../service/run-registry.js';
import type { SqliteRunRecordStore } from '../service/sqlite-run-record-store.js';
import type { EdgeServiceImpl } from '../service/edge-service.js';
import type { Surface } from '../surface.js';
import type { EdgeTransport } from '../transport/edge-transport.js';
import type { LocalCore } from './local-core.js';
import type { Logger } from '../logging.js';
import { errorText } from './error-text.js';

/** What a startup had started when it failed (the local core always; the rest once started). */
export interface StartedSoFar {
  local: Pick<LocalCore, 'pool' | 'governance' | 'events'>;
  transport?: EdgeTransport;
  cluster?: EdgeCluster;
  runStore?: SqliteRunRecordStore;
}

/** Undoes a failed startup: closes what `started` holds, in shutdown order. */
export async function undoStartup(started: StartedSoFar): Promise<void> {
  await started.cluster?.close();
  started.local.pool.close();
  await started.transport?.stop('startup-failed');
  await started.runStore?.close();
  await started.local.governance.close();
  started.local.events.close();
}

/** Everything a running edge stops. */
export interface RunningEdge {
  local: Pick<LocalCore, 'pool' | 'governance' | 'events' | 'tracing'>;
  logger: Logger;
  /** In start order; closed in reverse. */
  surfaces: readonly Surface[];
  refresher: ConfigRefresher | undefined;
  runRegistry: RunRegistry;
  cluster: EdgeCluster | undefined;
  service: EdgeServiceImpl;
  transport: EdgeTransport;
  runStore: SqliteRunRecordStore;
  /** Stored conversations (openai/sqlite-response-store.ts). */
  responseStore: { close(): Promise<void> | void };
}

/** Stops a running edge, from the outside in (the caller makes it idempotent). */
export async function stopEdge(edge: RunningEdge, reason: string): Promise<void> {
  const { local, logger } = edge;
  logger.info({ reason }, 'edge stopping');
  for (const surface of [...edge.surfaces].reverse()) {
    try {
      await surface.close();
    } catch (error) {
      logger.warn({ surface: surface.name, error: errorText(error) }, 'surface did not close cleanly');
    }
  }
  edge.refresher?.close();
  // Runs the surfaces left going (A2A tasks) are cancelled and new ones refused; not awaited: the service's
  // shutdown below ends every run, and a task's cancel may wait for its run's end.
  void edge.runRegistry.close();
  await edge.cluster?.close();
  edge.service.shutdown();
  local.pool.close();
  await edge.transport.stop(reason);
  // After the transport: runs ended by the nodes' Goodbye are recorded before the stores close.
  await edge.runStore.close();
  await edge.responseStore.close();
  await local.governance.close();
  await local.tracing.shutdown().catch((error: unknown) => {
    logger.warn({ error: errorText(error) }, 'exporting the last spans failed');
  });
  local.events.close();
  logger.info({ reason }, 'edge stopped');
}
