// Cluster-mode metrics on the edge's registry (only registered when cluster.enabled): per-edge and cluster-wide
// figures from the cluster view, and the runs this edge forwarded and served. Labels are edge ids (bounded by the
// number of edges).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EdgeState } from './cluster-view.js';
import { REJECT_REASONS, type RejectReason } from './fabric-sealer.js';

export interface ClusterMetricsSource {
  /** This edge's state and every live remote edge's. */
  states(): EdgeState[];
}

export interface ClusterMetrics {
  /** A run this edge forwarded to `to`. */
  forwarded(to: string): void;
  /** A run `from` forwarded here was admitted. */
  served(from: string): void;
}

export function registerClusterMetrics(registry: Registry, source: ClusterMetricsSource): ClusterMetrics {
  const registers = [registry];
  new Gauge({
    name: 'iop_cluster_edges',
    help: 'Live edges in the cluster, this one included.',
    registers,
    collect() {
      this.set(source.states().length);
    },
  });
  const perEdge = (name: string, help: string, pick: (state: EdgeState) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['edge'],
      registers,
      collect() {
        this.reset();
        for (const state of source.states()) this.set({ edge: state.edgeId }, pick(state));
      },
    });
  perEdge('iop_cluster_nodes', 'Nodes connected to each edge of the cluster.', (state) => state.nodes.length);
  perEdge('iop_cluster_in_flight', 'Runs in flight on the providers of each edge.', (state) =>
    state.providers.reduce((sum, provider) => sum + provider.inFlight, 0),
  );
  perEdge('iop_cluster_queued', 'Requests queued for the providers of each edge.', (state) =>
    state.providers.reduce((sum, provider) => sum + provider.queued, 0),
  );
  perEdge('iop_cluster_capacity', 'Capacity of the providers of each edge.', (state) =>
    state.providers.reduce((sum, provider) => sum + provider.capacity, 0),
  );
  const forwarded = new Counter({
    name: 'iop_cluster_forwarded_runs_total',
    help: 'Runs this edge forwarded to the edge owning their node.',
    labelNames: ['to'],
    registers,
  });
  const served = new Counter({
    name: 'iop_cluster_served_runs_total',
    help: 'Runs other edges forwarded here that this edge admitted.',
    labelNames: ['from'],
    registers,
  });
  return {
    forwarded: (to) => forwarded.inc({ to }),
    served: (from) => served.inc({ from }),
  };
}

/**
 * `iop_cluster_rejected_total{reason}`: messages and KV values dropped because the fabric key does not open them
 * (fabric-sealer.ts). Every reason is exported from the start (at 0), so an alert can watch for any increase.
 */
export function registerRejectedMetric(registry: Registry): { rejected(reason: RejectReason): void } {
  const counter = new Counter({
    name: 'iop_cluster_rejected_total',
    help: 'Cluster messages and KV values dropped because the fabric key did not authenticate them, by reason.',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of REJECT_REASONS) counter.inc({ reason }, 0);
  return { rejected: (reason) => counter.inc({ reason }) };
}

/** What `iop_cluster_ciphers_total` reads: the sealer's counts (fabric-sealer.ts). */
export interface CipherCounts {
  readonly madeAhead: { readonly seals: number; readonly opens: number };
  readonly madeInPlace: { readonly seals: number; readonly opens: number };
}

/**
 * `iop_cluster_ciphers_total{use, made}`: seals and opens of fabric messages whose AES-GCM cipher was made ahead
 * (off the message's path) or in place. A share of `in_place` that grows under steady load means bursts larger
 * than what the sealer keeps ready, or peers that do not offer nonces.
 */
export function registerCipherMetric(registry: Registry, counts: CipherCounts): void {
  new Counter({
    name: 'iop_cluster_ciphers_total',
    help: 'Seals and opens of cluster messages, by whether their cipher was made ahead or in place.',
    labelNames: ['use', 'made'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ use: 'seal', made: 'ahead' }, counts.madeAhead.seals);
      this.inc({ use: 'seal', made: 'in_place' }, counts.madeInPlace.seals);
      this.inc({ use: 'open', made: 'ahead' }, counts.madeAhead.opens);
      this.inc({ use: 'open', made: 'in_place' }, counts.madeInPlace.opens);
    },
  });
}
