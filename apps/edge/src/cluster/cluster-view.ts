// The cluster-wide view one edge keeps of the others: each edge's published state (its connected nodes and the
// providers on them, with capacity, in_flight, queued and health), stamped with the local time it arrived. An
// edge whose state has not been refreshed within the state TTL is gone: its providers leave the view and runs
// forwarded to it end. Pure data and decisions; edge-cluster.ts feeds it from NATS KV.
import type { NodeSummary } from '../present/node-summary.js';
import type { ProviderStatus } from '../present/provider-status.js';

/** What one edge publishes under its key (JSON). */
export interface EdgeState {
  edgeId: string;
  /** Node ids connected to this edge. */
  nodes: string[];
  /** The same nodes as `nodes list` shows them (without their discovery report, which stays on their edge). */
  nodeSummaries: NodeSummary[];
  /** Providers whose node is connected to this edge. */
  providers: ProviderStatus[];
  /** Revision of the config this edge runs (sha-256 of its edge.yaml as loaded; '' when unknown). */
  configRevision: string;
  /** This incarnation's random boot id: requests to the edge name it (a restart draws a new one). */
  bootId: string;
  /** Sender's wall clock (informational; liveness uses the receiver's clock). */
  sentAtUnixMs: number;
}

interface Entry {
  state: EdgeState;
  receivedAtMs: number;
}

/** Where a model run should go: this edge, or another edge by id. */
export type EdgeChoice = { kind: 'local' } | { kind: 'remote'; edgeId: string };

export class ClusterView {
  private readonly edges = new Map<string, Entry>();

  constructor(
    private readonly selfId: string,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** Records another edge's state (own state is ignored). */
  update(state: EdgeState): void {
    if (state.edgeId === this.selfId) return;
    this.edges.set(state.edgeId, { state, receivedAtMs: this.now() });
  }

  /** The edge left deliberately (its key was deleted). */
  remove(edgeId: string): void {
    this.edges.delete(edgeId);
  }

  /** Drops edges silent for longer than the TTL; returns their ids. */
  sweep(): string[] {
    const gone: string[] = [];
    const limit = this.now() - this.ttlMs;
    for (const [edgeId, entry] of this.edges) {
      if (entry.receivedAtMs < limit) {
        this.edges.delete(edgeId);
        gone.push(edgeId);
      }
    }
    return gone;
  }

  isLive(edgeId: string): boolean {
    const entry = this.edges.get(edgeId);
    return entry !== undefined && entry.receivedAtMs >= this.now() - this.ttlMs;
  }

  /** The boot id a live edge published; undefined when it is not a live member. */
  bootOf(edgeId: string): string | undefined {
    const entry = this.edges.get(edgeId);
    return entry !== undefined && entry.receivedAtMs >= this.now() - this.ttlMs
      ? entry.state.bootId
      : undefined;
  }

  /** Live remote edges' states, by id order. */
  states(): EdgeState[] {
    const limit = this.now() - this.ttlMs;
    return [...this.edges.values()]
      .filter((entry) => entry.receivedAtMs >= limit)
      .map((entry) => entry.state)
      .sort((a, b) => a.edgeId.localeCompare(b.edgeId));
  }

  /** Every node connected to another live edge, with that edge's id (a node claimed twice: the newer state). */
  remoteNodes(): NodeSummary[] {
    const byId = new Map<string, NodeSummary>();
    for (const state of this.states()) {
      for (const node of state.nodeSummaries) {
        const known = byId.get(node.nodeId);
        if (!known || node.connectedSinceUnixMs >= known.connectedSinceUnixMs) {
          byId.set(node.nodeId, { ...node, edgeId: state.edgeId });
        }
      }
    }
    return [...byId.values()];
  }

  /** The live remote edge a node is connected to, if any. */
  edgeOfNode(nodeId: string): string | undefined {
    return this.states().find((state) => state.nodes.includes(nodeId))?.edgeId;
  }

  /** The live remote edge where `providerId` is usable with a free slot (conversation affinity); else undefined. */
  edgeOfFreeProvider(providerId: string): string | undefined {
    for (const state of this.states()) {
      const provider = state.providers.find((entry) => entry.providerId === providerId);
      if (provider && usable(provider) && provider.inFlight < provider.capacity) return state.edgeId;
    }
    return undefined;
  }

  /**
   * The local snapshot with every provider whose node is connected to another live edge replaced by that edge's
   * figures: the cluster-wide pool as every edge sees it.
   */
  merge(local: ProviderStatus[]): ProviderStatus[] {
    const remote = new Map<string, ProviderStatus>();
    for (const state of this.states()) {
      for (const provider of state.providers) remote.set(provider.providerId, provider);
    }
    return local.map((provider) =>
      provider.status === 'offline' ? (remote.get(provider.providerId) ?? provider) : provider,
    );
  }

  /**
   * Where a run of a model served by `providerIds` goes: here when a local provider has a free slot; else the
   * remote edge with the most free slots; when nothing is free anywhere, here when a provider is local (the run
   * queues here), else the remote edge with the shortest queue; here when no edge has any (local admission gives
   * the precise refusal).
   */
  place(providerIds: readonly string[], local: ProviderStatus[]): EdgeChoice {
    const wanted = new Set(providerIds);
    const localUsable = local.filter((provider) => wanted.has(provider.providerId) && usable(provider));
    if (localUsable.some((provider) => provider.inFlight < provider.capacity)) return { kind: 'local' };
    let best: { edgeId: string; free: number; queued: number } | undefined;
    for (const state of this.states()) {
      const providers = state.providers.filter(
        (provider) => wanted.has(provider.providerId) && usable(provider),
      );
      if (providers.length === 0) continue;
      const free = providers.reduce(
        (sum, provider) => sum + Math.max(0, provider.capacity - provider.inFlight),
        0,
      );
      const queued = Math.min(...providers.map((provider) => provider.queued));
      if (!best || free > best.free || (free === best.free && free === 0 && queued < best.queued)) {
        best = { edgeId: state.edgeId, free, queued };
      }
    }
    if (best && best.free > 0) return { kind: 'remote', edgeId: best.edgeId };
    if (localUsable.length > 0 || !best) return { kind: 'local' };
    return { kind: 'remote', edgeId: best.edgeId };
  }
}

function usable(provider: ProviderStatus): boolean {
  return (
    provider.status === 'ready' &&
    provider.capacity > 0 &&
    provider.health !== 'unhealthy' &&
    provider.health !== 'unreachable' &&
    // An open circuit (passive health on the provider's edge): that edge's pool skips it too.
    provider.health !== 'open'
  );
}
