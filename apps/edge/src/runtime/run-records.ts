// Runtime step "open run records": background responses and A2A tasks, by (principal, kind, id); in cluster mode a
// miss is asked of the other edges, and the records are mirrored into the fabric's sealed KV bucket (a dead
// edge's records are answered from there). Bounds: DEFAULT_RUN_BOUNDS per kind (1000 runs, ended ones kept 1 hour).
// Their records are kept in `<data_dir>/runs.db` and restored here; runs the previous process left going are
// ended (failed, naming the restart) by their surfaces' hooks when the surfaces start, before any request is
// served — except background responses left queued with a resume payload, which the OpenAI surface places again.
import { randomUUID } from 'node:crypto';
import type { EdgeConfig } from '@iop/config';
import type { Clock } from '../clock.js';
import type { EdgeCluster } from '../cluster/edge-cluster.js';
import type { Logger } from '../logging.js';
import { RunRegistry } from '../service/run-registry.js';
import { mirroredRunRecords } from '../service/mirrored-run-record-store.js';
import { SqliteRunRecordStore } from '../service/sqlite-run-record-store.js';
import { errorText } from './error-text.js';

export function openRunRecords(
  config: EdgeConfig,
  logger: Logger,
  clock: Clock,
  cluster: EdgeCluster | undefined,
): { runStore: SqliteRunRecordStore; runRegistry: RunRegistry } {
  const registryLogger = logger.child({ component: 'run-registry' });
  const runStore = SqliteRunRecordStore.open(config.edge.data_dir, registryLogger);
  const runRegistry = new RunRegistry({
    clock,
    store: cluster ? mirroredRunRecords(runStore, cluster.runRecords) : runStore,
    origin: { edgeId: config.edge.id, boot: randomUUID() },
    onStoreFailure: (error, key) =>
      registryLogger.warn(
        { error: errorText(error), kind: key.kind, id: key.id },
        'writing a run record failed',
      ),
    ...(cluster ? { remote: cluster.runs } : {}),
  });
  const restored = runRegistry.restore();
  if (restored.restored > 0) registryLogger.info(restored, 'run records restored');
  return { runStore, runRegistry };
}
