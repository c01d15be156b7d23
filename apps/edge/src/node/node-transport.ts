// The edge's node transport as the runtime starts it: the transport's listener (transport/) with the node
// connection handler of this layer — registration against the token store and the node identity keys, a NodeLink per accepted node in the
// registry, heartbeats (one sweeping timer for every connection), node events, and the periodic token re-check
// that disconnects rotated or revoked nodes.
import { randomBytes } from 'node:crypto';
import type { EdgeConfig } from '@iop/config';
import { DEFAULT_MAX_FRAME_BYTES, type NodeConfigPayload } from '@iop/wire';
import { systemClock } from '../clock.js';
import type { EventBus } from '../events/types.js';
import type { ConnectionHandler } from '../transport/connection-handler.js';
import {
  startEdgeTransport,
  type EdgeTransport,
  type EdgeTransportOptions,
} from '../transport/edge-transport.js';
import { createHeartbeatSweeper } from './heartbeat-sweeper.js';
import { payloadForNode } from './mapper.js';
import { NodeConnection } from './node-connection.js';
import type { NodeLink } from './node-link.js';
import type { NodeRegistry } from './node-registry.js';
import type { NodeStore } from './node-store.js';
import { createNodeIdentityStore, type NodeIdentityStore } from './node-identity-store.js';
import { createTokenRevocation } from './token-revocation.js';
import type { ModelCallTermination } from './model-call-relay.js';

export interface NodeTransportOptions extends Omit<EdgeTransportOptions, 'handler'> {
  store: NodeStore;
  /** Identity keys on record per node; default: `node-identities.json` in `edge.data_dir`. */
  identities?: NodeIdentityStore;
  registry: NodeRegistry;
  events: EventBus;
  /** Payload sent to an accepted node; default: mapped from `config.nodes` (default payload for store-only ids). */
  payloadFor?: (nodeId: string) => NodeConfigPayload;
  /** Timeout of node commands and refreshes on each link. */
  requestTimeoutMs?: number;
  /** Where agents' model calls are served (model-call-relay.ts); none = every call is refused. */
  modelCalls?: ModelCallTermination;
  /** Called with the wire error code whenever a connection is closed for bad frames (metrics). */
  onFrameError?: (code: string) => void;
  /** How often connected nodes' tokens are re-verified (rotation/revocation); default 500 ms, 0 = never. */
  tokenCheckIntervalMs?: number;
}

/** Decoded bytes held for a registered link whose consumer lags (the wire's default). */
const REGISTERED_BUFFERED_BYTES = 4 * 1024 * 1024;

export function startNodeTransport(options: NodeTransportOptions): Promise<EdgeTransport> {
  return startEdgeTransport({ ...options, handler: nodeConnectionHandler(options) });
}

/** Turns accepted connections into registered nodes (or closes them with the reason). */
export function nodeConnectionHandler(options: NodeTransportOptions): ConnectionHandler {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  const revocation = createTokenRevocation({
    store: options.store,
    registry: options.registry,
    logger,
    clock,
    intervalMs: options.tokenCheckIntervalMs ?? 500,
  });
  const heartbeats = createHeartbeatSweeper({
    clock,
    intervalMs: config.edge.heartbeat_interval_ms,
    timeoutMs: config.edge.heartbeat_timeout_ms,
  });
  const settings = {
    edgeId: config.edge.id,
    store: options.store,
    registry: options.registry,
    events: options.events,
    clock,
    registerTimeoutMs: config.edge.register_timeout_ms,
    heartbeatIntervalMs: config.edge.heartbeat_interval_ms,
    heartbeatTimeoutMs: config.edge.heartbeat_timeout_ms,
    heartbeats,
    requestTimeoutMs: options.requestTimeoutMs,
    modelCalls: options.modelCalls,
    payloadFor: options.payloadFor ?? ((nodeId: string) => payloadForNode(config.nodes, nodeId)),
    agentKindFor: agentKinds(config),
    onFrameError: options.onFrameError ?? (() => undefined),
    registeredInputLimits: {
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      maxBufferedBytes: REGISTERED_BUFFERED_BYTES,
    },
    onAuthenticated: (link: NodeLink, token: string) => revocation.track(link, token),
    identities: options.identities ?? createNodeIdentityStore({ dataDir: config.edge.data_dir, clock }),
    randomBytes: (size: number) => randomBytes(size),
  };
  return {
    accept: (connection, peer) => new NodeConnection(connection, settings, peer),
    start: () => revocation.start(),
    stop: () => {
      revocation.stop();
      heartbeats.stop();
    },
  };
}

/** `nodes[].agent_kind` by node id (restart-only, so the startup config is the one in force). */
function agentKinds(config: EdgeConfig): (nodeId: string) => string | undefined {
  const byId = new Map(config.nodes.map((node) => [node.id, node.agent_kind]));
  return (nodeId) => byId.get(nodeId);
}
