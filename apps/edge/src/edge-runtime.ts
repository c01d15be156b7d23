// The edge's composition root: builds every long-lived object once and hands each surface the typed `EdgeCore`
// (each surface factory declares the part it uses). Used by `serve` and `console` (and end-to-end tests). The
// wiring runs in steps, each in runtime/: open the local core (local-core.ts: event bus, node store, registry,
// provider pool, metrics, governance, tracing), start the node transport, start the cluster (cluster-step.ts),
// open the run records (run-records.ts), build the service (service-step.ts), wire config refresh
// (refresh-step.ts), start the surfaces (start-surfaces.ts). The core is complete before any surface starts, so
// surface order never matters; the stop order (and the undoing of a failed startup) is runtime/shutdown-order.ts.
import type { EdgeConfig } from '@iop/config';
import { systemClock, type Clock } from './clock.js';
import type { Tracing } from '@iop/tracing';
import type { Logger } from './logging.js';
import type { NodeConfigApplyOptions, NodeConfigApplyOutcome } from './node/node-config-push.js';
import type { EdgeServiceImpl } from './service/edge-service.js';
import { createModelCallAuthenticator } from './service/model-call-auth.js';
import { createRunSecrets } from './governance/run-secrets.js';
import { ModelCallServerSlot } from './http/model-call-socket.js';
import type { EdgeCore } from './edge-core.js';
import { SqliteResponseStore } from './openai/sqlite-response-store.js';
import { responseStoreBounds } from './openai/response-store.js';
import type { Surface, SurfaceFactory } from './surface.js';
import { startNodeTransport } from './node/node-transport.js';
import type { EdgeTransport } from './transport/edge-transport.js';
import { serveCluster, startClusterIfEnabled } from './runtime/cluster-step.js';
import { openLocalCore } from './runtime/local-core.js';
import { wireConfigRefresh } from './runtime/refresh-step.js';
import { openRunRecords } from './runtime/run-records.js';
import { buildEdgeService } from './runtime/service-step.js';
import { stopEdge, undoStartup } from './runtime/shutdown-order.js';
import { startSurfaces } from './runtime/start-surfaces.js';

export interface EdgeRuntimeOptions {
  config: EdgeConfig;
  /** The file the config came from (config refresh resolves a candidate's relative paths against it). */
  configPath: string;
  logger: Logger;
  surfaces: SurfaceFactory[];
  clock?: Clock;
  /** Config refresher timings (tests shorten them). */
  refresh?: { waitMs?: number; nodeTimeoutMs?: number };
  /** Re-evaluation poll of the provider pool while requests wait (default 250 ms). */
  poolPollIntervalMs?: number;
  /** Span exporter and switch (tests); default from `tracing` of the config. */
  tracing?: Tracing;
}

export type { EdgeCore };

export interface EdgeRuntime extends EdgeCore {
  transportAddress: string;
  surfaces: Surface[];
  /**
   * Live refresh of node configuration, all or nothing (node/node-config-push.ts): every connected node whose
   * payload changed is sent it; only when all acknowledged does `options.commit` run and later registrations get
   * payloads from `config`; otherwise the nodes are reverted. The caller has already classified the change as live.
   */
  applyNodeConfig(config: EdgeConfig, options?: NodeConfigApplyOptions): Promise<NodeConfigApplyOutcome>;
  /** Stops everything; idempotent. */
  stop(reason?: string): Promise<void>;
}

export async function startEdgeRuntime(options: EdgeRuntimeOptions): Promise<EdgeRuntime> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  const local = openLocalCore({
    config,
    logger,
    clock,
    poolPollIntervalMs: options.poolPollIntervalMs,
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  const { events, store, registry, nodeConfigs, pool, metrics, governance } = local;

  // Agents' model calls (issue 42): runs of `fabric_model` profiles get a secret of their own; the node links
  // relay their calls into the OpenAI listener's server (attached when that surface starts), and a call is taken
  // only for a live parent on the very node that carried it (the service's answer, once the service exists).
  const runSecrets = createRunSecrets();
  const modelCallServer = new ModelCallServerSlot();
  const parents: { resolve?: EdgeServiceImpl['resolveParent'] } = {};
  let transport: EdgeTransport;
  try {
    transport = await startNodeTransport({
      modelCalls: {
        server: () => modelCallServer.current,
        confirmParent: (parent) => parents.resolve?.(parent) !== undefined,
        refused: () => metrics.childRuns.inc({ result: 'rejected' }),
      },
      config,
      store,
      registry,
      events,
      logger: logger.child({ component: 'transport' }),
      clock,
      payloadFor: (nodeId) => nodeConfigs.payloadFor(nodeId),
      onFrameError: (code) => metrics.frameErrors.inc({ code }),
    });
  } catch (error) {
    await undoStartup({ local });
    throw error;
  }
  const cluster = await startClusterIfEnabled(config, local, transport, logger, clock);
  const { runStore, runRegistry } = openRunRecords(config, logger, clock, cluster);
  const service = buildEdgeService(config, local, runRegistry, runSecrets, cluster, logger, clock);
  parents.resolve = (parent) => service.resolveParent(parent);
  const modelCallAuth = createModelCallAuthenticator({ secrets: runSecrets, service });
  if (cluster) await serveCluster(cluster, service, runRegistry, { local, transport, runStore });
  const { applyNodeConfig, refresher, servedRefresher } = wireConfigRefresh(
    { ...options, clock },
    local,
    cluster,
  );
  // Stored conversations (`store: true` responses) in `<data_dir>/responses.db`, beside the run records.
  const responseStore = SqliteResponseStore.open(config.edge.data_dir, {
    ...responseStoreBounds(config.openai.responses),
    clock,
    logger: logger.child({ component: 'response-store' }),
  });

  let ready = false;
  const surfaces: Surface[] = [];
  const core: EdgeCore = {
    config,
    configPath: options.configPath,
    logger,
    clock,
    events,
    store,
    registry,
    pool,
    service,
    metrics,
    governance,
    refresher: servedRefresher,
    ...(cluster?.usage ? { clusterUsage: cluster.usage } : {}),
    modelCallEntry: modelCallServer,
    modelCallAuth,
    responseStore,
    ready: () => ready,
  };
  let stopping: Promise<void> | undefined;
  const stop = (reason = 'shutdown'): Promise<void> => {
    ready = false;
    stopping ??= stopEdge(
      {
        local,
        logger,
        surfaces,
        refresher,
        runRegistry,
        cluster,
        service,
        transport,
        runStore,
        responseStore,
      },
      reason,
    );
    return stopping;
  };
  await startSurfaces(options.surfaces, core, surfaces, logger, stop);
  // Every subscriber that replays (the dashboard) has subscribed: from now on the bus keeps no event for replay.
  events.endReplay();
  ready = true;

  return {
    ...core,
    transportAddress: transport.address,
    surfaces,
    applyNodeConfig,
    stop,
  };
}
