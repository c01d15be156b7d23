// What the service is built over: this edge's placement (its pool and, in cluster mode, the other edges of the
// fabric) and the few other questions the service asks of what lies below — the models[] catalogue, the
// providers' and nodes' views, and node operations (commands, session termination) on a node connected here. The
// service holds one EdgePlacement and nothing below placement; errors come out as PlacementErrors.
import type { AdapterType, ModelConfig } from '@iop/config';
import type { NodeCommandRequest, NodeCommandResponse } from '@iop/wire';
import type { NodeLink } from '../node/node-link.js';
import type { NodeRegistry } from '../node/node-registry.js';
import type { ProviderPool } from '../pool/provider-pool.js';
import type { NodeSummary } from '../present/node-summary.js';
import type { ProviderStatus } from '../present/provider-status.js';
import { LocalPlacement, resolveNodeLink } from './local-placement.js';
import { nodeOperationError } from './lower-errors.js';
import type { ModelAccessGrant } from './model-access.js';
import type { Placement } from './placement.js';
import { PlacementRouter, type RemoteEdges } from './placement-router.js';
import { SessionSlots } from './session-slots.js';

/** The `models[]` side of the routing table, as the service and surfaces need it (catalogue, route resolution). */
export interface ModelCatalog {
  /** True when `model` is a models[] id (routed through the provider pool). */
  has(model: string): boolean;
  get(model: string): ModelConfig | undefined;
  /** models[] ids in config order. */
  ids(): string[];
  /** Adapter types (cli, ollama, openai_compat) of the enabled providers serving `model`. */
  backends(model: string): AdapterType[];
}

export interface AdmissionTotals {
  /** Runs holding capacity (started or being sent). */
  inFlight: number;
  /** Requests waiting in a queue. */
  queued: number;
}

/** A session on a node connected here. */
export interface NodeSessionTarget {
  adapter: string;
  target: string;
  sessionId: string;
}

/** Node operations on a node connected here; each rejects with a PlacementError. */
export interface LocalNodes {
  /** The nodes connected here. */
  list(): NodeSummary[];
  /** The connected node a reference names (id, unique alias; none = the only one). Throws PlacementError. */
  resolve(ref?: string): NodeSummary;
  command(
    ref: string | undefined,
    request: NodeCommandRequest,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<NodeCommandResponse>;
  /** Ends a session on the node `ref` names; resolves to that node's id. */
  terminateSession(ref: string | undefined, session: NodeSessionTarget): Promise<string>;
}

export interface EdgePlacement {
  readonly placement: Placement;
  readonly models: ModelCatalog;
  readonly nodes: LocalNodes;
  /** True in cluster mode (there are other edges). */
  readonly inFabric: boolean;
  /** Every provider: this edge's, and in cluster mode the other edges' latest figures. */
  providers(): ProviderStatus[];
  /** This edge's nodes (with this edge's id in cluster mode) and the other edges' nodes. */
  fabricNodes(): NodeSummary[];
  admissionTotals(): AdmissionTotals;
}

export interface EdgePlacementDeps {
  registry: NodeRegistry;
  pool: ProviderPool;
  /** Cluster mode: the other edges of the fabric, where runs may be placed; none = every run executes here. */
  remote?: RemoteEdges;
  /** This edge's id (`edge.id`): the edge of its own nodes in fabricNodes(). */
  edgeId?: string;
  /** Session slots for `{ kind: 'slot' }` sessions; created when omitted. */
  sessions?: SessionSlots;
  /** The model endpoint runs of `fabric_model` CLI profiles get (model-access.ts); none = never. */
  modelAccess?: ModelAccessGrant;
}

export function createEdgePlacement(deps: EdgePlacementDeps): EdgePlacement {
  const { registry, pool, remote } = deps;
  const local = new LocalPlacement({
    registry,
    pool,
    sessions: deps.sessions ?? new SessionSlots(),
    ...(deps.modelAccess ? { modelAccess: deps.modelAccess } : {}),
  });
  return {
    placement: new PlacementRouter(local, pool, remote),
    models: {
      has: (model) => pool.hasModel(model),
      get: (model) => pool.model(model),
      ids: () => pool.modelIds(),
      backends: (model) => pool.modelBackends(model),
    },
    nodes: localNodes(registry),
    inFabric: remote !== undefined,
    providers: remote ? () => remote.providers(pool.snapshot()) : () => pool.snapshot(),
    fabricNodes(): NodeSummary[] {
      const here = registry.list();
      if (!remote) return here;
      const edgeId = deps.edgeId ?? '';
      const mine = here.map((node) => ({ ...node, edgeId }));
      const ids = new Set(mine.map((node) => node.nodeId));
      return [...mine, ...remote.nodes().filter((node) => !ids.has(node.nodeId))];
    },
    admissionTotals: () => pool.totals(),
  };
}

function localNodes(registry: NodeRegistry): LocalNodes {
  const link = (ref: string | undefined): NodeLink => resolveNodeLink(registry, ref);
  return {
    list: () => registry.list(),
    resolve: (ref) => link(ref).summary(),
    async command(ref, request, options) {
      const target = link(ref);
      try {
        return await target.command(request, options);
      } catch (error) {
        throw nodeOperationError(error, target.nodeId);
      }
    },
    async terminateSession(ref, session) {
      const target = link(ref);
      try {
        await target.terminateSession(session, 'terminate-session');
      } catch (error) {
        throw nodeOperationError(error, target.nodeId);
      }
      return target.nodeId;
    },
  };
}
