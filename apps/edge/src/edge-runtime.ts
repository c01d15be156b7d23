// Assembles and runs the edge: event bus, node store, registry, service, node transport, then each surface.
// Used by `serve` and `console` (and end-to-end tests). Start order is bottom-up so a surface never sees a
// half-built core; stop order is the reverse: surfaces stop taking requests, the service refuses new work, nodes
// get Goodbye `shutdown` (which ends their in-flight runs), and the bus closes its subscriptions.
import type { EdgeConfig } from '@iop/config';
import { createEventBus, type ClosableEventBus } from './events/event-bus.js';
import type { Logger } from './logging.js';
import {
  createNodeConfigState,
  type NodeConfigApplyOptions,
  type NodeConfigApplyOutcome,
} from './node/node-config-push.js';
import { createNodeRegistry, type NodeRegistry } from './node/node-registry.js';
import { createNodeStore, type NodeStore } from './node/node-store.js';
import { createEdgeService, type EdgeServiceImpl } from './service/edge-service.js';
import type { Surface, SurfaceContext, SurfaceFactory } from './surface.js';
import { startEdgeTransport, type EdgeTransport } from './transport/edge-transport.js';

export interface EdgeRuntimeOptions {
  config: EdgeConfig;
  /** The file the config came from (for surfaces that re-read it, e.g. config refresh). */
  configPath: string;
  logger: Logger;
  surfaces: SurfaceFactory[];
  clock?: () => number;
  /** Pre-filled shared objects for surfaces (see SurfaceContext.extras). */
  extras?: Map<string, unknown>;
}

export interface EdgeRuntime {
  config: EdgeConfig;
  service: EdgeServiceImpl;
  events: ClosableEventBus;
  registry: NodeRegistry;
  store: NodeStore;
  transportAddress: string;
  surfaces: Surface[];
  extras: Map<string, unknown>;
  /**
   * Live refresh of node configuration, all or nothing (node/node-config-push.ts): every connected node whose
   * payload changed is sent it; only when all acknowledged does `options.commit` run and later registrations get
   * payloads from `config`; otherwise the nodes are reverted. The caller has already classified the change as live.
   */
  applyNodeConfig(config: EdgeConfig, options?: NodeConfigApplyOptions): Promise<NodeConfigApplyOutcome>;
  /** Stops everything; idempotent. */
  stop(reason?: string): Promise<void>;
}

/** Keys this module puts into SurfaceContext.extras. */
export const RUNTIME_EXTRAS = {
  configPath: 'configPath',
  nodeStore: 'nodeStore',
  /** `EdgeRuntime['applyNodeConfig']`, for the config-refresh surface (registered before surfaces start). */
  applyNodeConfig: 'applyNodeConfig',
  /** true once every surface started, false again when stopping (read by /readyz). */
  ready: 'runtimeReady',
  /** `FrameErrorSubscribe`: follow connections the transport closed for bad frames (the metrics count them). */
  frameErrors: 'frameErrors',
} as const;

/** Registers a listener for transport frame errors (wire error code); returns the unsubscribe function. */
export type FrameErrorSubscribe = (listener: (code: string) => void) => () => void;

export type ApplyNodeConfig = EdgeRuntime['applyNodeConfig'];

export async function startEdgeRuntime(options: EdgeRuntimeOptions): Promise<EdgeRuntime> {
  const { config, logger } = options;
  const clock = options.clock ?? Date.now;
  const events = createEventBus({ replaySize: 512, queueSize: 2048 });
  const store = createNodeStore({ dataDir: config.edge.data_dir, configNodes: config.nodes, clock });
  const registry = createNodeRegistry();
  // Nodes registering after a live refresh must get the refreshed payload.
  const nodeConfigs = createNodeConfigState(registry, config.nodes);
  const service = createEdgeService({
    registry,
    events,
    logger: logger.child({ component: 'service' }),
    clock,
  });
  const extras = options.extras ?? new Map<string, unknown>();
  extras.set(RUNTIME_EXTRAS.configPath, options.configPath);
  extras.set(RUNTIME_EXTRAS.nodeStore, store);
  // The transport starts before the surfaces (and so before the metrics exist): it reports to this fan-out.
  const frameErrorListeners = new Set<(code: string) => void>();
  const subscribeFrameErrors: FrameErrorSubscribe = (listener) => {
    frameErrorListeners.add(listener);
    return () => frameErrorListeners.delete(listener);
  };
  extras.set(RUNTIME_EXTRAS.frameErrors, subscribeFrameErrors);

  let transport: EdgeTransport;
  try {
    transport = await startEdgeTransport({
      config,
      store,
      registry,
      events,
      logger: logger.child({ component: 'transport' }),
      clock,
      payloadFor: (nodeId) => nodeConfigs.payloadFor(nodeId),
      onFrameError: (code) => {
        for (const listener of frameErrorListeners) listener(code);
      },
    });
  } catch (error) {
    events.close();
    throw error;
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
  extras.set(RUNTIME_EXTRAS.applyNodeConfig, applyNodeConfig);

  const surfaces: Surface[] = [];
  const context: SurfaceContext = { config, service, events, logger, registry, extras };
  let stopping: Promise<void> | undefined;
  const stop = (reason = 'shutdown'): Promise<void> => {
    stopping ??= (async () => {
      extras.set(RUNTIME_EXTRAS.ready, false);
      logger.info({ reason }, 'edge stopping');
      for (const surface of [...surfaces].reverse()) {
        try {
          await surface.close();
        } catch (error) {
          logger.warn({ surface: surface.name, error: errorText(error) }, 'surface did not close cleanly');
        }
      }
      service.shutdown();
      await transport.stop(reason);
      events.close();
      logger.info({ reason }, 'edge stopped');
    })();
    return stopping;
  };

  try {
    for (const factory of options.surfaces) {
      const surface = await factory(context);
      if (!surface) continue;
      surfaces.push(surface);
      logger.info({ surface: surface.name, address: surface.address }, 'surface listening');
    }
  } catch (error) {
    logger.error({ error: errorText(error) }, 'a surface failed to start; stopping the edge');
    await stop('startup-failed');
    throw error;
  }
  extras.set(RUNTIME_EXTRAS.ready, true);

  return {
    config,
    service,
    events,
    registry,
    store,
    transportAddress: transport.address,
    surfaces,
    extras,
    applyNodeConfig,
    stop,
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
