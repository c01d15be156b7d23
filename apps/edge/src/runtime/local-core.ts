// Runtime step 1, "open stores": the edge's local core before anything listens — event bus, node store, node
// registry and the node config each registration gets, the circuit breaker, the provider pool, metrics, governance
// (API keys, limits, the usage store) and tracing. Nothing here accepts a connection; the pool's re-evaluation
// loop and the metrics' event subscription start here.
import type { EdgeConfig } from '@iop/config';
import { createTracing, type Tracing } from '@iop/tracing';
import type { Clock } from '../clock.js';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import { openGovernance, type Governance } from '../governance/governance.js';
import type { Logger } from '../logging.js';
import { EdgeMetrics } from '../metrics/edge-metrics.js';
import { createNodeConfigState, type NodeConfigState } from '../node/node-config-push.js';
import { createNodeRegistry, type NodeRegistry } from '../node/node-registry.js';
import { createNodeStore, type NodeStore } from '../node/node-store.js';
import { CircuitBreaker } from '../pool/circuit-breaker.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';

export interface LocalCoreOptions {
  config: EdgeConfig;
  logger: Logger;
  clock: Clock;
  /** Re-evaluation poll of the provider pool while requests wait (default 250 ms). */
  poolPollIntervalMs?: number;
  /** Span exporter and switch (tests); default from `tracing` of the config. */
  tracing?: Tracing;
}

export interface LocalCore {
  events: ClosableEventBus;
  store: NodeStore;
  registry: NodeRegistry;
  /** The node configuration each registration gets (swapped by a live refresh). */
  nodeConfigs: NodeConfigState;
  circuits: CircuitBreaker;
  pool: ProviderPool;
  metrics: EdgeMetrics;
  governance: Governance;
  tracing: Tracing;
  /** `routing` of the config in force: a refresh swaps it with the pool's table. */
  routing: { current: EdgeConfig['routing'] };
}

export function openLocalCore(options: LocalCoreOptions): LocalCore {
  const { config, logger, clock } = options;
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
  const routing = { current: config.routing };
  let circuitClosed = (): void => undefined;
  const circuits = new CircuitBreaker({
    settings: routing.current.circuit_breaker,
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
  return { events, store, registry, nodeConfigs, circuits, pool, metrics, governance, tracing, routing };
}
