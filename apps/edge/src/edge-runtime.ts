// The edge's composition root: builds every long-lived object once — event bus, node store, registry, provider
// pool, session slots, service, metrics, config refresher, node transport — and hands each surface the typed
// `EdgeCore` (each surface factory declares the part it uses). Used by `serve` and `console` (and end-to-end
// tests). The core is complete before any surface starts, so surface order never matters; stop order is the
// reverse: surfaces stop taking requests, the pool refuses its waiters, the service refuses new work, nodes get
// Goodbye `shutdown` (which ends their in-flight runs), and the bus closes its subscriptions.
import { randomUUID } from 'node:crypto';
import type { EdgeConfig } from '@iop/config';
import { systemClock, type Clock } from './clock.js';
import { startEdgeCluster, type EdgeCluster } from './cluster/edge-cluster.js';
import { createEventBus } from './events/event-bus.js';
import { openGovernance } from './governance/governance.js';
import { createTracing, type Tracing } from '@iop/tracing';
import { CLOSE_REASONS } from '@iop/wire';
import type { Logger } from './logging.js';
import { EdgeMetrics } from './metrics/edge-metrics.js';
import {
  createNodeConfigState,
  type NodeConfigApplyOptions,
  type NodeConfigApplyOutcome,
} from './node/node-config-push.js';
import { createNodeRegistry } from './node/node-registry.js';
import { createNodeStore } from './node/node-store.js';
import { CircuitBreaker } from './pool/circuit-breaker.js';
import { createProviderPool } from './pool/provider-pool.js';
import { createConfigRefresher } from './refresh/config-refresher.js';
import { createEdgeService, type AdmissionMetrics, type EdgeServiceImpl } from './service/edge-service.js';
import { createModelCallAuthenticator } from './service/model-call-auth.js';
import { createRunSecrets } from './governance/run-secrets.js';
import { ModelCallServerSlot } from './http/model-call-socket.js';
import { createModelAccessGrant } from './placement/model-access.js';
import { RunRegistry } from './service/run-registry.js';
import { SqliteRunRecordStore } from './service/sqlite-run-record-store.js';
import type { EdgeCore } from './edge-core.js';
import type { Surface, SurfaceFactory } from './surface.js';
import { startNodeTransport } from './node/node-transport.js';
import type { EdgeTransport } from './transport/edge-transport.js';

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

export type ApplyNodeConfig = EdgeRuntime['applyNodeConfig'];

export async function startEdgeRuntime(options: EdgeRuntimeOptions): Promise<EdgeRuntime> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  const events = createEventBus({ replaySize: 512, queueSize: 2048 });
  const store = createNodeStore({
    dataDir: config.edge.data_dir,
    configNodes: config.nodes,
    clock,
    onUnreadable: (error) =>
      logger.error({ error: error.message }, 'node store unreadable: accepting only the tokens in edge.yaml'),
  });
  const registry = createNodeRegistry();
  // Nodes registering after a live refresh must get the refreshed payload.
  const nodeConfigs = createNodeConfigState(registry, config.nodes);
  // Passive health: the supervisor reports each attempt's outcome, the pool skips open circuits, and waiters are
  // re-evaluated when one closes. `routing` is live: a refresh swaps it with the pool's table.
  let routing = config.routing;
  let circuitClosed = (): void => undefined;
  const circuits = new CircuitBreaker({
    settings: routing.circuit_breaker,
    clock,
    logger: logger.child({ component: 'circuit-breaker' }),
    onChange: (_providerId, _from, to) => {
      if (to === 'closed') circuitClosed();
    },
  });
  const pool = createProviderPool({
    config,
    nodes: registry,
    events,
    clock,
    logger: logger.child({ component: 'provider-pool' }),
    pollIntervalMs: options.poolPollIntervalMs,
    // Called only on dispatches, after `metrics` below exists.
    onColdLoad: (providerId) => metrics.modelColdLoads.inc({ provider: providerId }),
    // Read at placement time, after `metrics` below exists.
    metrics: { affinity: (result) => metrics.affinityResults.inc({ result }) },
    circuits,
  });
  circuitClosed = () => pool.notifyChanged();
  const metrics = new EdgeMetrics({
    processMetrics: true,
    connectedNodes: () => registry.size,
    // The links themselves (nodeId, discovered): building every node's summary per gauge per scrape cost ms at
    // 10,000 nodes.
    discoveredNodes: () => registry.links(),
    providerSnapshot: () => pool.snapshot(),
    nodeLoads: () => pool.nodeLoads(),
  });
  const governance = openGovernance({
    config,
    clock,
    logger: logger.child({ component: 'governance' }),
    registry: metrics.registry,
  });
  const tracing =
    options.tracing ??
    createTracing({
      enabled: config.tracing.enabled,
      serviceName: 'iop-edge',
      sampleRatio: config.tracing.sample_ratio,
      ...(config.tracing.otlp_endpoint ? { otlpEndpoint: config.tracing.otlp_endpoint } : {}),
    });
  pool.start();
  // The subscription ends when the bus closes.
  metrics.followEvents(events);

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
    pool.close();
    await governance.close();
    events.close();
    throw error;
  }
  // Cluster mode only (`cluster.enabled`): NATS state, node ownership and forwarded runs (cluster/), below the
  // service: its directory and transport are the service's remote placement, its limits the shared limits.
  let cluster: EdgeCluster | undefined;
  if (config.cluster.enabled) {
    try {
      cluster = await startEdgeCluster({
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
      pool.close();
      await transport.stop('startup-failed');
      await governance.close();
      events.close();
      throw error;
    }
  }
  // Background responses and A2A tasks, by (principal, kind, id); in cluster mode a miss is asked of the other edges.
  // Bounds: DEFAULT_RUN_BOUNDS per kind (1000 runs, ended ones kept 1 hour). Their records are kept in
  // `<data_dir>/runs.db` and restored here; runs the previous process left going are ended (failed, naming the
  // restart) by their surfaces' hooks when the surfaces start, before any request is served.
  const registryLogger = logger.child({ component: 'run-registry' });
  const runStore = SqliteRunRecordStore.open(config.edge.data_dir, registryLogger);
  const runRegistry = new RunRegistry({
    clock,
    store: runStore,
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
  const service = createEdgeService({
    runRegistry,
    registry,
    pool,
    events,
    logger: logger.child({ component: 'service' }),
    clock,
    metrics: admissionMetrics(metrics),
    retryAttempts: () => routing.retry.max_attempts,
    outcomes: circuits,
    modelAccess: createModelAccessGrant(config.nodes, runSecrets),
    governor: governance.governor,
    reserveMaxTokens: config.usage.reserve_max_tokens,
    tracing,
    edgeId: config.edge.id,
    ...(cluster ? { remote: cluster.remote } : {}),
    ...(cluster?.limits ? { sharedLimits: cluster.limits } : {}),
  });
  parents.resolve = (parent) => service.resolveParent(parent);
  const modelCallAuth = createModelCallAuthenticator({ secrets: runSecrets, service });
  if (cluster) {
    try {
      // The fabric serves runs forwarded here only once the service exists: one explicit step, no order to keep.
      await cluster.serve(service);
      cluster.serveRuns(runRegistry);
    } catch (error) {
      await cluster.close();
      pool.close();
      await transport.stop('startup-failed');
      await runStore.close();
      await governance.close();
      events.close();
      throw error;
    }
  }

  const applyNodeConfig: ApplyNodeConfig = async (next, applyOptions = {}) => {
    const outcome = await nodeConfigs.apply(next.nodes, applyOptions);
    logger.info(
      {
        status: outcome.status,
        results: outcome.results.map((result) => `${result.node_id}:${result.status}`),
      },
      'node configuration pushed',
    );
    return outcome;
  };
  const refresher = config.refresh.enabled
    ? createConfigRefresher({
        config,
        clock,
        configPath: options.configPath,
        // The pool's table and the API keys (live) switch together on apply.
        routing: {
          applyConfig(next: EdgeConfig) {
            routing = next.routing;
            circuits.applyConfig(next.routing.circuit_breaker);
            circuits.retain(new Set(next.nodes.flatMap((node) => node.providers.map((entry) => entry.id))));
            pool.applyConfig(next);
            governance.applyConfig(next);
          },
        },
        applyNodeConfig,
        logger: logger.child({ component: 'config-refresh' }),
        waitMs: options.refresh?.waitMs,
        nodeTimeoutMs: options.refresh?.nodeTimeoutMs,
      })
    : undefined;
  // Cluster mode: a refresh asked of this edge is applied on every edge, all or nothing.
  const servedRefresher =
    cluster && refresher ? cluster.attachRefresher(refresher, options.configPath) : refresher;

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
    ready: () => ready,
  };
  let stopping: Promise<void> | undefined;
  const stop = (reason = 'shutdown'): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      logger.info({ reason }, 'edge stopping');
      for (const surface of [...surfaces].reverse()) {
        try {
          await surface.close();
        } catch (error) {
          logger.warn({ surface: surface.name, error: errorText(error) }, 'surface did not close cleanly');
        }
      }
      refresher?.close();
      // Runs the surfaces left going (A2A tasks) are cancelled and new ones refused; not awaited: the service's
      // shutdown below ends every run, and a task's cancel may wait for its run's end.
      void runRegistry.close();
      await cluster?.close();
      service.shutdown();
      pool.close();
      await transport.stop(reason);
      // After the transport: runs ended by the nodes' Goodbye are recorded before the stores close.
      await runStore.close();
      await governance.close();
      await tracing.shutdown().catch((error: unknown) => {
        logger.warn({ error: errorText(error) }, 'exporting the last spans failed');
      });
      events.close();
      logger.info({ reason }, 'edge stopped');
    })();
    return stopping;
  };

  try {
    for (const factory of options.surfaces) {
      const surface = await factory(core);
      if (!surface) continue;
      surfaces.push(surface);
      logger.info({ surface: surface.name, address: surface.address }, 'surface listening');
    }
  } catch (error) {
    logger.error({ error: errorText(error) }, 'a surface failed to start; stopping the edge');
    await stop('startup-failed');
    throw error;
  }
  ready = true;

  return {
    ...core,
    transportAddress: transport.address,
    surfaces,
    applyNodeConfig,
    stop,
  };
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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
