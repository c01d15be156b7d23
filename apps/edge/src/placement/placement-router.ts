// The edge's Placement: this edge's pool, and in cluster mode the other edges of the fabric. A models[] run goes
// where the cluster view finds the most free capacity (this edge on a tie), an explicit route to the edge its
// node is connected to; everything else runs here. On a single edge there is no RemoteEdges and every run is
// reserved in the local pool with one branch.
import type { NodeSummary } from '../node/node-summary.js';
import type { ProviderPool, ProviderStatus } from '../pool/provider-pool.js';
import type { LocalPlacement } from './local-placement.js';
import type { Placement, PlacementRequest, Reservation } from './placement.js';
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

  edgeFor(destination: RunDestination): string | undefined {
    const remote = this.remote;
    if (!remote?.accepting) return undefined;
    if (destination.kind === 'model') {
      const model = this.pool.model(destination.model);
      if (!model) return undefined;
      return remote.edgeForProviders(Object.keys(model.providers), this.pool.snapshot());
    }
    const ref = destination.node?.trim() ?? '';
    if (ref === '' || this.local.hasNode(ref)) return undefined;
    return remote.edgeOfNode(ref);
  }

  reserve(request: PlacementRequest, edgeId: string | undefined): Promise<Reservation> {
    if (edgeId === undefined || !this.remote) return this.local.reserve(request);
    return Promise.resolve(this.remote.reserve(edgeId));
  }
}
