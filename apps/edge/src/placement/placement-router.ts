// The edge's Placement: this edge's pool, and in cluster mode the other edges of the fabric. A models[] run goes
// where the cluster view finds the most free capacity (this edge on a tie), an explicit route to the edge its
// node is connected to; everything else runs here. On a single edge there is no RemoteEdges and every run is
// reserved in the local pool with one branch.
//
// Conversation affinity across the fabric: provider ids are unique in the fabric (one edge.yaml), so this edge's
// pool table remembers key → provider for runs it forwarded too (the owner's answer names the provider). A model
// run whose key was last served by a provider of another edge goes to that edge while the provider has a free
// slot there (the owner's pool then prefers the same provider, since the key travels with the run); otherwise
// the normal choice applies. Keys are per requesting edge: a conversation whose turns arrive at different edges
// is kept together only by each edge's own memory.
import type { NodeSummary } from '../present/node-summary.js';
import type { ModelPolicy, ProviderPool } from '../pool/provider-pool.js';
import type { ProviderStatus } from '../present/provider-status.js';
import type { LocalPlacement } from './local-placement.js';
import type { Dispatched, ExecutionObserver, Placement, PlacementRequest, Reservation } from './placement.js';
import type { RunDestination } from './run-types.js';

/**
 * The other edges of the fabric, as placement needs them: a directory (where capacity and nodes are) and a
 * transport (a run forwarded there). Implemented by the cluster (cluster/edge-cluster.ts) over NATS.
 */
export interface RemoteEdges {
  /** False once this edge is leaving the fabric: every run is placed here from then on. */
  readonly accepting: boolean;
  /** The other edge a run on these providers should go to, given this edge's own figures; undefined = here. */
  edgeForProviders(providerIds: readonly string[], local: ProviderStatus[]): string | undefined;
  /** The other edge a node (id or alias) is connected to; undefined = none. */
  edgeOfNode(ref: string): string | undefined;
  /** The other live edge where provider `providerId` is usable and has a free slot now; undefined = none. */
  edgeOfFreeProvider(providerId: string): string | undefined;
  /**
   * A reservation for a run forwarded to `edgeId`. Nothing is held here before dispatch: the owner's own run
   * supervisor admits it exactly (limits travel as the principal's lease).
   */
  reserve(edgeId: string): Reservation;
  /** Every provider of the fabric: this edge's figures and the other edges' latest ones. */
  providers(local: ProviderStatus[]): ProviderStatus[];
  /** The other edges' nodes, each with its edge id. */
  nodes(): NodeSummary[];
}

export class PlacementRouter implements Placement {
  constructor(
    private readonly local: LocalPlacement,
    private readonly pool: ProviderPool,
    private readonly remote: RemoteEdges | undefined,
  ) {}

  modelPolicy(destination: RunDestination): ModelPolicy | undefined {
    return destination.kind === 'model' ? this.pool.modelPolicy(destination.model) : undefined;
  }

  edgeFor(request: PlacementRequest): string | undefined {
    const remote = this.remote;
    if (!remote?.accepting) return undefined;
    const { destination } = request;
    if (destination.kind === 'model') {
      const model = request.modelPolicy;
      if (!model) return undefined;
      const providers = model.config.providers;
      const local = this.pool.snapshot();
      const key = request.affinityKey;
      const preferred = key === undefined ? undefined : this.pool.affinityProvider(key);
      if (preferred !== undefined && Object.hasOwn(providers, preferred)) {
        const here = local.find((provider) => provider.providerId === preferred);
        if (here?.status === 'ready' && here.inFlight < here.capacity) return undefined;
        const owner = remote.edgeOfFreeProvider(preferred);
        if (owner !== undefined) return owner;
      }
      return remote.edgeForProviders(Object.keys(providers), local);
    }
    const ref = destination.node?.trim() ?? '';
    if (ref === '' || this.local.hasNode(ref)) return undefined;
    return remote.edgeOfNode(ref);
  }

  reserve(request: PlacementRequest, edgeId: string | undefined): Promise<Reservation> {
    if (edgeId === undefined || !this.remote) return this.local.reserve(request);
    const reservation = this.remote.reserve(edgeId);
    const key = request.affinityKey;
    return Promise.resolve(
      key === undefined ? reservation : new RememberingReservation(reservation, key, this.pool),
    );
  }
}

/** A forwarded run's reservation that records which provider the owner edge placed the run's key on. */
class RememberingReservation implements Reservation {
  constructor(
    private readonly inner: Reservation,
    private readonly key: string,
    private readonly pool: ProviderPool,
  ) {}

  get edgeId(): string | undefined {
    return this.inner.edgeId;
  }
  get nodeId(): string {
    return this.inner.nodeId;
  }
  get adapter(): string {
    return this.inner.adapter;
  }
  get target(): string {
    return this.inner.target;
  }
  get providerId(): string | undefined {
    return this.inner.providerId;
  }
  get queueMs(): number {
    return this.inner.queueMs;
  }
  get deadlineSlackMs(): number {
    return this.inner.deadlineSlackMs;
  }

  async dispatch(
    request: PlacementRequest,
    observer: ExecutionObserver,
    traceparent: string,
  ): Promise<Dispatched> {
    const dispatched = await this.inner.dispatch(request, observer, traceparent);
    if (dispatched.providerId !== undefined && dispatched.providerId !== '') {
      this.pool.recordAffinity(this.key, dispatched.providerId);
    }
    return dispatched;
  }

  cancel(reason: string): void {
    this.inner.cancel(reason);
  }

  release(): void {
    this.inner.release();
  }
}
