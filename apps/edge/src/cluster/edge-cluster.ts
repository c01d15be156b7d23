// Cluster mode (`cluster.enabled`): several edges with the same edge.yaml form one fabric over NATS. Off by
// default; a single edge never loads this path. What goes over NATS (agent-contract/inner/edge-cluster.md):
//
//   KV `iop_edges`   key <edge id>  → EdgeState JSON: connected nodes and their providers' figures; put on every
//                                     change (coalesced) and every heartbeat; deleted on a clean stop.
//   KV `iop_nodes`   key <node id>  → { edgeId, claimedAtUnixMs }: the node's owner, written by compare-and-set
//                                     on registration (the newest claim wins; the older edge drops its link).
//   iop.run.<edge>                  request/reply: a forwarded run; the owner does the exact admission.
//   iop.events.<edge>.<forward id>  the owner streams the run's events, then `done`, to the requesting edge.
//   iop.cancel.<edge>               a requester cancels (or its client left) a run it forwarded to <edge>; only
//                                     the edge that forwarded the run may cancel it.
//   iop.limits.<edge>               a key's limits, counted on its home edge (cluster-limits.ts).
//   KV `iop_runs`    key run.<hash> → the durable record of a background response / A2A task, copied from each
//                                     edge's run store; read when the run's edge left (run-record-mirror.ts,
//                                     run-failover.ts).
//
// Both buckets have a TTL of cluster.state_ttl_ms. Liveness uses the receiver's clock: an edge silent for longer
// than the TTL is gone; runs forwarded to it end with an error, runs it forwarded here are cancelled.
//
// The cluster sits below the service: it is a remote directory (which edge has which nodes and free capacity)
// and a transport (a run forwarded to the owner edge) behind placement's RemoteEdges, and it serves runs other
// edges forward here through the service's `runHere` (ForwardedRunHost). It keeps no run lifetime of its own: a
// forwarded run has one supervisor on each edge, each with the run's one deadline there.
//
// Every message and KV value goes through the fabric bus (fabric-bus.ts): sealed with the fabric key for its
// subject or KV key; what does not open never reaches this file. Each process draws a random boot id at start and
// publishes it in its sealed state; every request to an edge names that edge's boot id inside the ciphertext, so
// a recording replayed after the edge restarted is dropped. A peer whose state shows a new boot id restarted: what
// was forwarded to or from its earlier life ends as if it had left.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import type { Registry } from 'prom-client';
import type { ClusterConfig, EdgeConfig } from '@iop/config';
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import { unwatchAbort, watchAbort } from '../abort-watchers.js';
import { repeat, type Clock } from '../clock.js';
import type { EventBus, EventSubscription } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { NodeSummary } from '../present/node-summary.js';
import { PlacementError } from '../placement/errors.js';
import type {
  Dispatched,
  ExecutionObserver,
  ForwardedRunHost,
  PlacementRequest,
  Reservation,
  ServedRun,
} from '../placement/placement.js';
import type { RemoteEdges } from '../placement/placement-router.js';
import type { RunDestination, RunOutcome, RunSpec, RunSurface } from '../placement/run-types.js';
import type { ProviderStatus } from '../present/provider-status.js';
import type { RunEventWithMeta } from '../events/types.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { Governor } from '../governance/governor.js';
import type { Principal } from '../governance/principal.js';
import {
  HomeLimitLease,
  createClusterLimits,
  type ClusterLimits,
  type LimitLeaseRef,
} from './cluster-limits.js';
import {
  registerCipherMetric,
  registerClusterMetrics,
  registerRejectedMetric,
  type ClusterMetrics,
} from './cluster-metrics.js';
import {
  createFabricBus,
  type FabricBus,
  type FabricMsg,
  type SealedKv,
  type SealedKvEntry,
} from './fabric-bus.js';
import { keyFileIsShared, readFabricKeyring, type FabricKeyring } from './fabric-keyring.js';
import { FabricSealer } from './fabric-sealer.js';
import { createClusterRefresher, type ClusterRefresher } from './cluster-refresh.js';
import { createPeerCalls, type PeerCalls } from './peer-calls.js';
import { createRemoteRuns, serveRuns } from './cluster-runs.js';
import {
  DEFAULT_RUN_BOUNDS,
  type LocalRuns,
  type RemoteRuns,
  type RunRecordMirror,
} from '../placement/run-directory.js';
import { openRunRecords } from './open-run-records.js';
import type { FabricRunRecords } from './run-record-mirror.js';
import { withRunFailover } from './run-failover.js';
import { createClusterUsage, type ClusterUsage } from './cluster-usage.js';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import { fromWirePrincipal, toWirePrincipal, type WirePrincipal } from '../governance/wire-principal.js';
import { ClusterView, type EdgeState } from './cluster-view.js';

export const EDGES_BUCKET = 'iop_edges';
/** Events per message at most (a message stays far below NATS' payload limit). */
const MAX_EVENT_BATCH = 64;
/** State changes within this window go out in one put. */
const PUBLISH_COALESCE_MS = 50;
export const NODES_BUCKET = 'iop_nodes';
/** How long leaving the cluster waits for queued run-record copies. */
const RUN_RECORDS_CLOSE_MS = 2_000;

export interface EdgeClusterOptions {
  config: EdgeConfig;
  /** This edge's connected nodes as `nodes list` shows them (its published state). */
  localNodes(): NodeSummary[];
  /** This edge's providers with their figures (its published state). */
  localProviders(): ProviderStatus[];
  /** Node connect/disconnect events (ownership and state publishing). */
  events: EventBus;
  /** Node ids connected here now. */
  connectedNodes(): string[];
  /** Closes this edge's link to a node another edge claimed after it (`claimed-elsewhere`: the node reconnects). */
  dropNode(nodeId: string): void;
  logger: Logger;
  clock: Clock;
  /** How long a forwarded run may wait for its admission at the owning edge (default 120 s). */
  forwardAdmitTimeoutMs?: number;
  /**
   * How much longer than the owner the requesting edge waits for a forwarded run with a deadline to end, so the
   * owner's own timeout reaches it first (default 8 s, on top of the service's deadline grace).
   */
  forwardDeadlineSlackMs?: number;
  /** Where the iop_cluster_* metrics go (the edge's /metrics registry); none = not exported. */
  registry?: Registry;
  /** This edge's governor: with it, API-key limits are counted cluster-wide on each key's home edge. */
  governor?: Governor;
  /** This edge's usage totals (its usage store): with it, usage is answered cluster-wide. */
  usage?: (query: UsageQuery) => UsageRow[];
  /** The fabric keyring; default: read from cluster.fabric_key_file. */
  keyring?: FabricKeyring;
}

export interface EdgeCluster {
  readonly edgeId: string;
  /** The other edges as placement sees them (directory and transport): given to the service. */
  readonly remote: RemoteEdges;
  readonly view: ClusterView;
  /**
   * Starts taking part: serves runs forwarded here through `host`, claims this edge's nodes, publishes its state
   * and starts the heartbeat. Called once, when the service exists.
   */
  serve(host: ForwardedRunHost): Promise<void>;
  /** Runs this edge forwarded that have not ended. */
  readonly forwardedRuns: number;
  /** Runs other edges forwarded here that have not ended. */
  readonly servedRuns: number;
  /** Publishes this edge's state now (tests; normally coalesced on change and on the heartbeat). */
  publishState(): Promise<void>;
  /**
   * The edge's config refresher made cluster-wide (cluster-refresh.ts): a refresh asked here is dry-run on every
   * live edge and applied on all or none. `configPath` is the file this edge started from.
   */
  attachRefresher(local: ConfigRefresher, configPath: string): ConfigRefresher;
  /** Calls to the other live edges for state one edge holds (A2A tasks). */
  readonly peers: PeerCalls;
  /** The other edges' run registries (background responses, A2A tasks), for the service's run registry. */
  readonly runs: RemoteRuns;
  /** Where the run registry's store copies each record for the other edges (the sealed KV `iop_runs`). */
  readonly runRecords: RunRecordMirror;
  /** Answers the other edges' run lookups from this edge's registry (until close). */
  serveRuns(local: LocalRuns): void;
  /** Cluster-wide key limits; undefined without a governor. */
  readonly limits: ClusterLimits | undefined;
  /** Usage totals of every live edge added up (GetUsage); undefined without `usage`. */
  readonly usage: ((query: UsageQuery) => Promise<UsageRow[]>) | undefined;
  /** Ends forwarded runs, deletes this edge's state and node claims, closes the connection; idempotent. */
  close(): Promise<void>;
}

interface ForwardRequest {
  forwardId: string;
  from: string;
  destination: RunDestination;
  spec: RunSpec;
  surface: RunSurface;
  model?: string;
  traceparent?: string;
  principal?: WirePrincipal;
  /** The principal's limits, reserved on its home edge by the requester. */
  lease?: LimitLeaseRef;
  /** The requester's boot id: a later state of it with another one ends this run (that process is gone). */
  fromBoot?: string;
}

export type ForwardReply =
  | {
      ok: true;
      runId: string;
      nodeId: string;
      adapter: string;
      target: string;
      sessionId: string;
      providerId: string | null;
      queueMs: number;
      /** The run's first events, when they were ready with the answer (one message instead of two). */
      events?: RunEventWithMeta[];
    }
  /** `code`: the owner service's error code (the requester maps it back, unknown codes as `node_error`). */
  | { ok: false; code: string; message: string; retryAfterSeconds: number | null };

/**
 * On a run's events subject: first the owner's ForwardReply (the answer to the forward, sent to its reply
 * subject), then events in batches (what the run produced within one turn of the event loop, a terminal part at
 * once), and `done` only when the run ended without a terminal part.
 */
export type ForwardMessage = { t: 'events'; events: RunEventWithMeta[] } | { t: 'done'; outcome: RunOutcome };

interface NodeClaim {
  edgeId: string;
  claimedAtUnixMs: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function encode(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

function decode<T>(data: Uint8Array): T {
  return JSON.parse(decoder.decode(data)) as T;
}

/** NATS connection options from `cluster.nats` (credentials and TLS files are read here). */
export function natsConnectOptions(cluster: ClusterConfig, name: string): Parameters<typeof connect>[0] {
  const tls = cluster.nats.tls;
  return {
    servers: [...cluster.nats.servers],
    name,
    // No stack captured up front for every request and timeout (KV puts, peer calls): a cost per message.
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    ...(cluster.nats.credentials_file !== ''
      ? { authenticator: credsAuthenticator(fs.readFileSync(cluster.nats.credentials_file)) }
      : {}),
    ...(tls.enabled
      ? {
          tls: {
            ...(tls.ca_file !== '' ? { caFile: tls.ca_file } : {}),
            ...(tls.cert_file !== '' ? { certFile: tls.cert_file } : {}),
            ...(tls.key_file !== '' ? { keyFile: tls.key_file } : {}),
          },
        }
      : {}),
  };
}

const revisions = new WeakMap<EdgeConfig, string>();

/** A digest of the routing-relevant config (models and nodes): edges whose revisions differ are reported. */
export function configRevision(config: EdgeConfig): string {
  // Configs are immutable once loaded (a refresh makes a new object): one digest per config.
  let revision = revisions.get(config);
  if (revision === undefined) {
    revision = createHash('sha256')
      .update(JSON.stringify({ models: config.models, nodes: config.nodes }))
      .digest('hex')
      .slice(0, 16);
    revisions.set(config, revision);
  }
  return revision;
}

export async function startEdgeCluster(options: EdgeClusterOptions): Promise<EdgeCluster> {
  const { config, logger } = options;
  const cluster = config.cluster;
  // The key first: without it nothing this edge sends or receives would count.
  const keyring = options.keyring ?? readFabricKeyring(cluster.fabric_key_file);
  if (!options.keyring && keyFileIsShared(cluster.fabric_key_file)) {
    logger.warn(
      { file: cluster.fabric_key_file },
      'cluster: the fabric key file is readable by group or others (chmod 600 it)',
    );
  }
  const raw = await connect(natsConnectOptions(cluster, `iop-edge ${config.edge.id}`));
  const now = () => options.clock.now();
  const sealer = new FabricSealer({ keyring, sender: config.edge.id, now });
  if (options.registry) registerCipherMetric(options.registry, sealer);
  const view = new ClusterView(config.edge.id, cluster.state_ttl_ms, now);
  const nc = createFabricBus({
    nc: raw,
    edgeId: config.edge.id,
    sealer,
    logger,
    clock: options.clock,
    // New at every start: requests sealed for an earlier life of this edge name another one.
    bootId: randomBytes(16).toString('hex'),
    peerBoot: (edgeId) => view.bootOf(edgeId),
    ...(options.registry ? { sink: registerRejectedMetric(options.registry) } : {}),
  });
  try {
    const kvm = new Kvm(raw);
    const edgesKv = nc.kv(
      await kvm.create(EDGES_BUCKET, { ttl: cluster.state_ttl_ms, history: 1 }),
      EDGES_BUCKET,
      cluster.state_ttl_ms,
    );
    const nodesKv = nc.kv(
      await kvm.create(NODES_BUCKET, { ttl: cluster.state_ttl_ms, history: 1 }),
      NODES_BUCKET,
      cluster.state_ttl_ms,
    );
    const runRecords = await openRunRecords({
      kvm,
      nc,
      clock: options.clock,
      logger,
      registry: options.registry,
    });
    return await ClusterImpl.start(options, view, nc, edgesKv, nodesKv, runRecords);
  } catch (error) {
    await nc.close().catch(() => undefined);
    logger.error({ error: errorText(error) }, 'cluster: NATS setup failed');
    throw error;
  }
}

interface Served {
  from: string;
  /** The requester process's boot id ('' when it did not say). */
  fromBoot: string;
  /** Where the run's events go. */
  subject: string;
  controller: AbortController;
  handle: ServedRun | undefined;
}

class ClusterImpl implements EdgeCluster, RemoteEdges, ForwardTransport {
  readonly edgeId: string;
  readonly view: ClusterView;
  /** Runs forwarded from here that have not been released, by forward id. */
  private readonly forwarded = new Map<string, ForwardedRun>();
  private host: ForwardedRunHost | undefined;
  private readonly served = new Map<string, Served>();
  /** Revision of this edge's claim per node id. */
  private readonly claims = new Map<string, number>();
  /** Stops the heartbeat. */
  private stopHeartbeat: (() => void) | undefined;
  private currentConfig: () => EdgeConfig;
  readonly peers: PeerCalls;
  readonly runs: RemoteRuns;
  private stopServingRuns: (() => void) | undefined;
  private localRuns: LocalRuns | undefined;
  readonly limits: ClusterLimits | undefined;
  private readonly clusterUsage: ClusterUsage | undefined;
  private clusterRefresher: ClusterRefresher | undefined;
  private subscription: EventSubscription | undefined;
  private publishScheduled = false;
  private closing: Promise<void> | undefined;
  private stopWatches: (() => void)[] = [];
  private readonly metrics: ClusterMetrics | undefined;
  private claimsRefreshedAt = 0;
  private readonly forwardPrefix = randomBytes(6).toString('hex');
  private forwardSequence = 0;

  private constructor(
    private readonly options: EdgeClusterOptions,
    view: ClusterView,
    private readonly nc: FabricBus,
    private readonly edgesKv: SealedKv,
    private readonly nodesKv: SealedKv,
    readonly runRecords: FabricRunRecords,
  ) {
    this.edgeId = options.config.edge.id;
    this.view = view;
    this.currentConfig = () => options.config;
    this.peers = createPeerCalls({
      nc,
      clock: options.clock,
      edgeId: this.edgeId,
      liveEdges: () => this.view.states().map((state) => state.edgeId),
    });
    this.runs = withRunFailover({
      remote: createRemoteRuns(this.peers),
      mirror: runRecords,
      edgeId: this.edgeId,
      isLive: (edgeId) => this.view.isLive(edgeId),
      local: () => this.localRuns,
      bounds: () => DEFAULT_RUN_BOUNDS,
      clock: options.clock,
    });
    this.limits = options.governor
      ? createClusterLimits({
          nc,
          edgeId: this.edgeId,
          liveEdges: () => this.view.states().map((state) => state.edgeId),
          governor: options.governor,
          logger: options.logger,
          clock: options.clock,
          leaseTtlMs: 2 * options.config.cluster.state_ttl_ms,
          // Budgets count every edge's usage store (created below; asked only once a key is used).
          spentElsewhere: (principalId, sinceMs) =>
            this.clusterUsage?.spentElsewhere(principalId, sinceMs) ?? Promise.resolve(0),
        })
      : undefined;
    this.clusterUsage = options.usage
      ? createClusterUsage({ peers: this.peers, local: options.usage })
      : undefined;
    this.metrics = options.registry
      ? registerClusterMetrics(options.registry, { states: () => [this.state(), ...this.view.states()] })
      : undefined;
  }

  static async start(
    options: EdgeClusterOptions,
    view: ClusterView,
    nc: FabricBus,
    edgesKv: SealedKv,
    nodesKv: SealedKv,
    runRecords: FabricRunRecords,
  ) {
    const impl = new ClusterImpl(options, view, nc, edgesKv, nodesKv, runRecords);
    await impl.begin();
    return impl;
  }

  get usage(): ((query: UsageQuery) => Promise<UsageRow[]>) | undefined {
    const clusterUsage = this.clusterUsage;
    return clusterUsage ? (query) => clusterUsage.usage(query) : undefined;
  }

  get forwardedRuns(): number {
    return this.forwarded.size;
  }

  get servedRuns(): number {
    return this.served.size;
  }

  get remote(): RemoteEdges {
    return this;
  }

  // ---- RemoteEdges: the directory and transport placement uses ------------------------------------------------

  get accepting(): boolean {
    return this.closing === undefined && this.host !== undefined;
  }

  edgeForProviders(providerIds: readonly string[], local: ProviderStatus[]): string | undefined {
    const placement = this.view.place(providerIds, local);
    return placement.kind === 'remote' ? placement.edgeId : undefined;
  }

  edgeOfNode(ref: string): string | undefined {
    return this.view.edgeOfNode(ref);
  }

  edgeOfFreeProvider(providerId: string): string | undefined {
    return this.view.edgeOfFreeProvider(providerId);
  }

  reserve(edgeId: string): Reservation {
    // Unique per requester (its subject) and, with this process's random prefix, at every owner.
    const forwardId = `${this.forwardPrefix}${(this.forwardSequence += 1).toString(36)}`;
    return new ForwardedRun(
      edgeId,
      forwardId,
      this,
      this.options.forwardAdmitTimeoutMs ?? 120_000,
      this.options.forwardDeadlineSlackMs ?? 8_000,
      this.options.clock,
    );
  }

  providers(local: ProviderStatus[]): ProviderStatus[] {
    return this.view.merge(local);
  }

  nodes(): NodeSummary[] {
    return this.view.remoteNodes();
  }

  // ---- ForwardTransport: what a ForwardedRun sends ------------------------------------------------------------

  sendForward(run: ForwardedRun, request: PlacementRequest, traceparent: string): void {
    if (this.nc.isClosed()) throw new Error('the NATS connection is closed');
    const principal = request.principal;
    const forward: ForwardRequest = {
      forwardId: run.forwardId,
      from: this.edgeId,
      destination: request.destination,
      // The run id travels: the owner's supervisor runs it under the same id (cancelRun works on either edge).
      spec: { ...request.spec, runId: request.runId },
      surface: request.surface,
      model: request.model,
      ...(traceparent !== '' ? { traceparent } : {}),
      ...(principal ? { principal: toWirePrincipal(principal) } : {}),
      ...(principal?.lease instanceof HomeLimitLease ? { lease: principal.lease.ref } : {}),
      fromBoot: this.nc.bootId,
    };
    // The lease's home takes its release from the owner too from now on (before the owner can send one).
    if (principal?.lease instanceof HomeLimitLease) this.limits?.grant(principal.lease.ref, run.edgeId);
    // Not nc.request: the owner's answer comes first on this run's events subject (one subscription for all
    // forwarded runs, same order as the events), so no per-request inbox, timer promise or error object. Bound to
    // the owner's boot id (throws when it is not known: the run is placed again).
    this.nc.publish(`iop.run.${run.edgeId}`, JSON.stringify(forward), {
      reply: `iop.events.${this.edgeId}.${run.forwardId}`,
      to: run.edgeId,
    });
    this.forwarded.set(run.forwardId, run);
  }

  sendCancel(run: ForwardedRun, reason: string): void {
    if (this.nc.isClosed()) throw new Error('the NATS connection is closed');
    this.nc.publish(`iop.cancel.${run.edgeId}`, encode({ forwardId: run.forwardId, reason }), {
      to: run.edgeId,
    });
  }

  accepted(run: ForwardedRun, principal: Principal | undefined): void {
    this.metrics?.forwarded(run.edgeId);
    // The owner holds the lease now (it reports it open and finishes it).
    if (principal?.lease instanceof HomeLimitLease) principal.lease.handOff();
  }

  released(run: ForwardedRun): void {
    if (this.forwarded.get(run.forwardId) !== run) return;
    this.forwarded.delete(run.forwardId);
  }

  private get logger(): Logger {
    return this.options.logger;
  }

  private async begin(): Promise<void> {
    const edgesWatch = await this.edgesKv.watch();
    this.stopWatches.push(() => edgesWatch.stop());
    void this.follow(edgesWatch, (entry) => this.onEdgeEntry(entry));
    const nodesWatch = await this.nodesKv.watch({ include: 'updates' });
    this.stopWatches.push(() => nodesWatch.stop());
    void this.follow(nodesWatch, (entry) => this.onNodeEntry(entry));

    // The server's "no responders" to a forward is not authenticated (the bus drops it): a forward waits for the
    // owner's sealed answer until the admission timeout, or until the sealed membership view says it is gone.
    this.nc.subscribe(`iop.events.${this.edgeId}.*`, {
      callback: (error, msg) => {
        if (error) return;
        const forwardId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
        const forward = this.forwarded.get(forwardId);
        // Only the edge the run went to speaks for it.
        if (!forward || msg.sender !== forward.edgeId) return;
        let message: ForwardMessage | ForwardReply;
        try {
          message = decode<ForwardMessage | ForwardReply>(msg.data);
        } catch {
          forward.lost('malformed event from the owning edge');
          return;
        }
        forward.receive(message);
      },
    });
    await this.nc.flush();
    void this.nc.closed().then(() => {
      for (const forward of [...this.forwarded.values()]) forward.lost('the edge lost its NATS connection');
    });
  }

  serveRuns(local: LocalRuns): void {
    if (this.stopServingRuns) throw new Error('the cluster already serves a run registry');
    this.stopServingRuns = serveRuns(this.peers, local);
    this.localRuns = local;
    this.runRecords.adoptInto((key, state) => local.adoptEnding(key, state));
  }

  async serve(host: ForwardedRunHost): Promise<void> {
    if (this.host) throw new Error('the cluster is already serving');
    this.host = host;
    this.nc.subscribe(`iop.run.${this.edgeId}`, {
      bound: true,
      callback: (error, msg) => {
        if (!error) void this.serveForward(msg, host);
      },
    });
    this.nc.subscribe(`iop.cancel.${this.edgeId}`, {
      bound: true,
      callback: (error, msg) => {
        if (error) return;
        try {
          const { forwardId, reason } = decode<{ forwardId: string; reason: string }>(msg.data);
          if (typeof forwardId !== 'string') throw new Error('shape');
          const served = this.served.get(forwardId);
          // Only the edge that forwarded the run may cancel it.
          if (!served) return;
          if (served.from !== msg.sender) {
            this.logger.warn(
              { forwardId, sender: msg.sender, from: served.from },
              'cluster: a cancel from an edge that did not forward the run ignored',
            );
            return;
          }
          this.cancelServed(forwardId, String(reason));
        } catch {
          this.logger.warn({}, 'cluster: malformed cancel message ignored');
        }
      },
    });
    await this.nc.flush();

    // Node events: claim on connect, release on disconnect; any change republishes the state soon.
    this.subscription = this.options.events.subscribe();
    void (async () => {
      for await (const event of this.subscription as EventSubscription) {
        if (event.type === 'node') {
          if (event.event.kind === 'connected') void this.claim(event.event.nodeId);
          else if (event.event.kind === 'disconnected') void this.unclaim(event.event.nodeId);
          this.schedulePublish();
        } else if (event.event.part.type === 'start' || isTerminalPart(event.event.part)) {
          // A run took or released capacity; text deltas change nothing others see.
          this.schedulePublish();
        }
      }
    })();
    for (const nodeId of this.options.connectedNodes()) await this.claim(nodeId);
    await this.publishState();

    const cluster = this.options.config.cluster;
    this.stopHeartbeat = repeat(this.options.clock, cluster.heartbeat_ms, () => void this.heartbeat());
    this.logger.info({ edgeId: this.edgeId, servers: cluster.nats.servers }, 'cluster: joined');
  }

  private async follow(
    iterator: AsyncIterable<SealedKvEntry>,
    handle: (entry: SealedKvEntry) => void,
  ): Promise<void> {
    try {
      for await (const entry of iterator) {
        try {
          handle(entry);
        } catch (error) {
          this.logger.warn({ key: entry.key, error: errorText(error) }, 'cluster: bad KV entry ignored');
        }
      }
    } catch (error) {
      if (!this.closing) this.logger.warn({ error: errorText(error) }, 'cluster: KV watch ended');
    }
  }

  private onEdgeEntry(entry: SealedKvEntry): void {
    // An edge writes (and deletes) only its own state.
    if (entry.key === this.edgeId || entry.sender !== entry.key) return;
    if (entry.operation !== 'PUT') {
      this.view.remove(entry.key);
      this.edgeGone(entry.key);
      return;
    }
    const state = entry.json<EdgeState>();
    if (state.edgeId !== entry.key || !isBootId(state.bootId)) return;
    // A new boot id: the edge restarted. What went to or came from its earlier life ends as if it had left.
    const previous = this.view.bootOf(state.edgeId);
    if (previous !== undefined && previous !== state.bootId) this.edgeGone(state.edgeId, state.bootId);
    const ours = configRevision(this.currentConfig());
    if (state.configRevision !== ours) {
      this.logger.warn(
        { edgeId: state.edgeId, revision: state.configRevision, ours },
        'cluster: an edge runs a different config revision',
      );
    }
    this.view.update(state);
  }

  private onNodeEntry(entry: SealedKvEntry): void {
    if (entry.operation !== 'PUT') return;
    const claim = entry.json<NodeClaim>();
    const mine = this.claims.get(entry.key);
    // A claim counts only from the edge it names (the fabric key authenticated the sender).
    if (
      claim.edgeId !== entry.sender ||
      claim.edgeId === this.edgeId ||
      mine === undefined ||
      entry.revision <= mine
    )
      return;
    // A newer claim from another edge: the node (or a newer process with its id) is there now.
    this.claims.delete(entry.key);
    if (this.options.connectedNodes().includes(entry.key)) {
      this.logger.info({ nodeId: entry.key, edgeId: claim.edgeId }, 'cluster: node claimed by another edge');
      this.options.dropNode(entry.key);
    }
  }

  /** Compare-and-set of the node's owner key to this edge (the newest claim wins). */
  private async claim(nodeId: string): Promise<void> {
    const value = encode({ edgeId: this.edgeId, claimedAtUnixMs: this.options.clock.now() });
    for (let attempt = 0; attempt < 5 && !this.closing; attempt++) {
      try {
        const current = await this.nodesKv.get(nodeId);
        const revision = current
          ? await this.nodesKv.update(nodeId, value, current.revision)
          : await this.nodesKv.create(nodeId, value);
        this.claims.set(nodeId, revision);
        return;
      } catch (error) {
        this.logger.debug({ nodeId, error: errorText(error) }, 'cluster: node claim raced; retrying');
      }
    }
    this.logger.warn({ nodeId }, 'cluster: could not claim node ownership');
  }

  private async unclaim(nodeId: string): Promise<void> {
    if (this.options.connectedNodes().includes(nodeId)) return; // replaced by a newer local connection
    const revision = this.claims.get(nodeId);
    if (revision === undefined) return;
    this.claims.delete(nodeId);
    await this.nodesKv.delete(nodeId, { previousSeq: revision }).catch(() => undefined);
  }

  private async refreshClaims(): Promise<void> {
    for (const [nodeId, revision] of [...this.claims]) {
      const value = encode({ edgeId: this.edgeId, claimedAtUnixMs: this.options.clock.now() });
      try {
        this.claims.set(nodeId, await this.nodesKv.update(nodeId, value, revision));
      } catch {
        // Another edge claimed it meanwhile: the watch drops our link.
      }
    }
  }

  private state(): EdgeState {
    const nodes = new Set(this.options.connectedNodes());
    return {
      edgeId: this.edgeId,
      nodes: [...nodes].sort(),
      nodeSummaries: this.options
        .localNodes()
        .filter((node) => nodes.has(node.nodeId))
        .map(({ discovered: _discovered, ...node }) => node),
      providers: this.options.localProviders().filter((provider) => nodes.has(provider.nodeId)),
      configRevision: configRevision(this.currentConfig()),
      bootId: this.nc.bootId,
      sentAtUnixMs: this.options.clock.now(),
    };
  }

  attachRefresher(local: ConfigRefresher, configPath: string): ConfigRefresher {
    let initialYaml = '';
    try {
      initialYaml = fs.readFileSync(configPath, 'utf8');
    } catch (error) {
      this.logger.warn(
        { error: errorText(error) },
        'cluster: config file unreadable; refreshes asked of other edges are refused here',
      );
    }
    this.currentConfig = () => local.current();
    this.clusterRefresher = createClusterRefresher({
      edgeId: this.edgeId,
      nc: this.nc,
      liveEdges: () => this.view.states().map(({ edgeId, configRevision }) => ({ edgeId, configRevision })),
      revision: () => configRevision(local.current()),
      local,
      initialYaml,
      logger: this.logger,
      clock: this.options.clock,
    });
    return this.clusterRefresher.refresher;
  }

  async publishState(): Promise<void> {
    if (this.closing) return;
    await this.edgesKv.put(this.edgeId, encode(this.state()));
  }

  private schedulePublish(): void {
    if (this.publishScheduled || this.closing) return;
    this.publishScheduled = true;
    this.options.clock.setTimeout(() => {
      this.publishScheduled = false;
      this.publishState().catch((error: unknown) =>
        this.logger.warn({ error: errorText(error) }, 'cluster: state publish failed'),
      );
    }, PUBLISH_COALESCE_MS);
  }

  private async heartbeat(): Promise<void> {
    if (this.closing) return;
    for (const gone of this.view.sweep()) this.edgeGone(gone);
    this.limits?.tick();
    const now = performance.now();
    for (const forward of [...this.forwarded.values()]) {
      if (!this.view.isLive(forward.edgeId)) this.endForwardsTo(forward.edgeId);
      else forward.expire(now);
    }
    try {
      await this.publishState();
      // Claims only need to outlive the TTL: refreshed about three times per TTL, not on every heartbeat.
      const now = this.options.clock.now();
      if (now - this.claimsRefreshedAt >= this.options.config.cluster.state_ttl_ms / 3) {
        this.claimsRefreshedAt = now;
        await this.refreshClaims();
      }
    } catch (error) {
      this.logger.warn({ error: errorText(error) }, 'cluster: heartbeat failed');
    }
  }

  /**
   * An edge left or went silent, or (`newBoot`) restarted: end what its earlier life owned for us and what we run
   * for it. A restarted edge's new life may have asked already (it can before its state reaches us): kept.
   */
  private edgeGone(edgeId: string, newBoot?: string): void {
    this.nc.peerGone(edgeId);
    this.endForwardsTo(edgeId);
    this.limits?.edgeGone(edgeId, newBoot);
    for (const [forwardId, served] of this.served) {
      if (served.from === edgeId && (newBoot === undefined || served.fromBoot !== newBoot)) {
        this.cancelServed(forwardId, `edge ${edgeId} is gone`);
      }
    }
  }

  private endForwardsTo(edgeId: string): void {
    for (const forward of [...this.forwarded.values()]) {
      if (forward.edgeId === edgeId) forward.lost(`edge ${edgeId}, which owned the run's node, is gone`);
    }
  }

  // ---- owner side: runs forwarded to this edge -------------------------------------------------------------

  private async serveForward(msg: FabricMsg, host: ForwardedRunHost): Promise<void> {
    let request: ForwardRequest;
    try {
      request = decode<ForwardRequest>(msg.data);
      if (typeof request.forwardId !== 'string' || request.from !== msg.sender) throw new Error('shape');
    } catch {
      msg.respond(
        encode({ ok: false, code: 'invalid_request', message: 'malformed forward', retryAfterSeconds: null }),
      );
      return;
    }
    const served: Served = {
      from: request.from,
      fromBoot: typeof request.fromBoot === 'string' ? request.fromBoot : '',
      subject: `iop.events.${request.from}.${request.forwardId}`,
      controller: new AbortController(),
      handle: undefined,
    };
    this.served.set(request.forwardId, served);
    const principal = request.principal ? this.principalOf(request.principal, request.lease) : undefined;
    let handle: ServedRun;
    try {
      // The owner's own supervisor admits it (limits by the lease it carries, capacity, the one deadline here).
      handle = await host.runHere(request.destination, request.spec, {
        surface: request.surface,
        ...(request.model !== undefined ? { model: request.model } : {}),
        ...(request.traceparent !== undefined ? { traceparent: request.traceparent } : {}),
        ...(principal ? { principal } : {}),
        signal: served.controller.signal,
      });
    } catch (error) {
      this.served.delete(request.forwardId);
      msg.respond(encode(refusalOf(error)));
      return;
    }
    served.handle = handle;
    this.metrics?.served(request.from);
    const reply: Extract<ForwardReply, { ok: true }> = {
      ok: true,
      runId: handle.runId,
      nodeId: handle.nodeId,
      adapter: handle.adapter,
      target: handle.target,
      sessionId: handle.sessionId,
      providerId: handle.providerId ?? null,
      queueMs: handle.queueMs,
    };
    const subject = served.subject;
    let terminalSent = false;
    // The answer goes at the end of this turn (after the run's frame to the node, which is written then too, so
    // that write comes first), carrying the events produced until then; every later flush sends events only.
    let replied = false;
    let batch: RunEventWithMeta[] = [];
    let failed = false;
    const flush = (): void => {
      if (failed) return;
      try {
        if (!replied) {
          replied = true;
          // The events of the first turn travel in the answer itself.
          if (batch.length > 0) reply.events = batch;
          batch = [];
          msg.respond(JSON.stringify(reply));
        }
        if (batch.length === 0) return;
        this.nc.publish(subject, JSON.stringify({ t: 'events', events: batch } satisfies ForwardMessage));
      } catch (error) {
        // The connection closed under the run: the requester ends it as lost (its edge sees this one leave).
        failed = true;
        this.logger.warn(
          { runId: handle.runId, error: errorText(error) },
          'cluster: forwarded run stream failed',
        );
      }
      batch = [];
    };
    setImmediate(flush);
    // Read synchronously as the supervisor delivers (no promise per event): the terminal part is sealed and sent
    // from inside the supervisor's end, before its bookkeeping (release, usage record) and the next turn.
    const reading = handle.events.forEach((event) => {
      // Nothing more can be sent once a send failed: the events are not kept either.
      if (failed) return;
      batch.push(event);
      const terminal = isTerminalPart(event.part);
      terminalSent ||= terminal;
      if (terminal || batch.length >= MAX_EVENT_BATCH) flush();
      else if (batch.length === 1) setImmediate(flush);
    });
    await reading.done;
    flush();
    const outcome = await handle.done;
    // Runs ended by this edge's own stop were already reported to the requester as an error; a terminal part
    // already decided the outcome there (the requester ends on it), so `done` goes only when none was sent.
    if (!this.served.delete(request.forwardId) || terminalSent || this.nc.isClosed()) return;
    this.nc.publish(subject, encode({ t: 'done', outcome } satisfies ForwardMessage));
  }

  /** A forwarded run's principal, with the lease its requester reserved (released here when the run ends). */
  private principalOf(wire: WirePrincipal, lease: LimitLeaseRef | undefined) {
    const principal = fromWirePrincipal(wire);
    return lease && this.limits ? this.limits.withLimitLease(principal, lease) : principal;
  }

  private cancelServed(forwardId: string, reason: string): void {
    const served = this.served.get(forwardId);
    if (!served) return;
    if (served.handle) void served.handle.cancel(reason);
    else served.controller.abort(new Error(reason));
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopHeartbeat?.();
      this.subscription?.close();
      this.limits?.close();
      this.clusterUsage?.close();
      for (const stop of this.stopWatches) stop();
      this.clusterRefresher?.close();
      this.stopServingRuns?.();
      for (const forward of [...this.forwarded.values()]) forward.leave();
      // Runs other edges forwarded here end there with an error (this edge is leaving), then here.
      const leaving: RunOutcome = {
        status: 'error',
        code: 'node_disconnected',
        message: `edge ${this.edgeId}, which owned the run's node, is shutting down`,
      };
      for (const [forwardId, served] of [...this.served]) {
        this.nc.publish(served.subject, encode({ t: 'done', outcome: leaving } satisfies ForwardMessage));
        this.cancelServed(forwardId, 'shutdown');
        this.served.delete(forwardId);
      }
      await this.runRecords.close(RUN_RECORDS_CLOSE_MS);
      try {
        await this.edgesKv.delete(this.edgeId);
        for (const [nodeId, revision] of this.claims) {
          await this.nodesKv.delete(nodeId, { previousSeq: revision }).catch(() => undefined);
        }
        await this.nc.drain();
      } catch (error) {
        this.logger.warn({ error: errorText(error) }, 'cluster: leaving the cluster was not clean');
        await this.nc.close().catch(() => undefined);
      }
      this.logger.info({ edgeId: this.edgeId }, 'cluster: left');
    })();
    return this.closing;
  }
}

/** What a ForwardedRun sends over the fabric (the cluster, over NATS). */
export interface ForwardTransport {
  /** Publishes the forward to the owner edge; throws when it cannot be sent. */
  sendForward(run: ForwardedRun, request: PlacementRequest, traceparent: string): void;
  /** Publishes a cancel of the forward to the owner edge; throws when it cannot be sent. */
  sendCancel(run: ForwardedRun, reason: string): void;
  /** The owner admitted the run (metrics; the limit lease is the owner's from now on). */
  accepted(run: ForwardedRun, principal: Principal | undefined): void;
  /** The supervisor released the run: messages for it are ignored from now on. */
  released(run: ForwardedRun): void;
}

/**
 * The requesting edge's side of a forwarded run, as a placement Reservation: the forward sent to the owner edge,
 * the owner's answer, the owner's events handed to the run's supervisor, and the cancel. It has no deadline and
 * no event buffer of its own (the supervisor holds the run's one deadline and its stream). Its one time limit is
 * the owner's answer, checked on the heartbeat (no timer per run). An owner that leaves the sealed membership view
 * before answering rejects the dispatch with `owner_unreachable`, after which the supervisor admits the run here;
 * one still in the view that does not answer in time fails the run (it may have started there).
 */
export class ForwardedRun implements Reservation {
  readonly nodeId = '';
  readonly adapter = '';
  readonly target = '';
  readonly providerId = undefined;
  readonly queueMs = 0;
  private observer: ExecutionObserver | undefined;
  private answer:
    { resolve: (where: Dispatched) => void; reject: (error: PlacementError) => void } | undefined;
  private principal: Principal | undefined;
  private signal: AbortSignal | undefined;
  private admitBy = Infinity;
  private where: Dispatched | undefined;
  private lastSeq = 0;
  private runId = '';
  private cancelSent = false;
  private released = false;
  /** The owner took the run (its answer was ok): only then can the run be lost there. */
  private started = false;
  private readonly onAbort = (): void => this.cancel('client disconnected');

  constructor(
    readonly edgeId: string,
    readonly forwardId: string,
    private readonly transport: ForwardTransport,
    private readonly admitTimeoutMs: number,
    readonly deadlineSlackMs: number,
    private readonly clock: Clock,
  ) {}

  dispatch(request: PlacementRequest, observer: ExecutionObserver, traceparent: string): Promise<Dispatched> {
    if (this.released || this.observer) {
      return Promise.reject(new PlacementError('owner_unreachable', 'the forward was already used'));
    }
    this.observer = observer;
    this.runId = request.runId;
    this.principal = request.principal;
    const answer = new Promise<Dispatched>((resolve, reject) => {
      this.answer = { resolve, reject };
    });
    // Until the owner answers, a caller that leaves cancels the forward (the owner then refuses it: aborted).
    if (request.signal) {
      this.signal = request.signal;
      // (Already aborted: the supervisor's own watch cancels the run once it is armed.)
      if (!request.signal.aborted) watchAbort(request.signal, this.onAbort);
    }
    this.admitBy = performance.now() + this.admitTimeoutMs;
    try {
      this.transport.sendForward(this, request, traceparent);
    } catch (error) {
      this.unanswered(`forwarding to edge ${this.edgeId} failed: ${errorText(error)}`);
    }
    return answer;
  }

  /** A message on the run's events subject: the owner's answer first, then its events. */
  receive(message: ForwardMessage | ForwardReply): void {
    if (this.released) return;
    if ('ok' in message) {
      this.answered(message);
      if (message.ok && Array.isArray(message.events)) this.deliver(message.events);
      return;
    }
    const observer = this.observer;
    if (!observer || this.answer) return;
    if (message.t === 'events') {
      this.deliver(message.events);
      return;
    }
    // `done`: the run ended on the owner without a terminal part (the owner is leaving): made into one here; an
    // error ends it as a loss (the run did not end on the owner's word, so its lease is returned from here).
    if (message.outcome.status === 'error') {
      observer.onLost('node_disconnected', message.outcome.message);
      return;
    }
    observer.onEvent({
      runId: this.runId,
      nodeId: this.where?.nodeId ?? '',
      seq: this.lastSeq + 1,
      atUnixMs: this.clock.now(),
      part: terminalPartOf(message.outcome),
    });
  }

  private deliver(events: RunEventWithMeta[]): void {
    for (const event of events) {
      // An observer can end the run from inside onEvent (released then): nothing more goes to it.
      const observer = this.observer;
      if (!observer || this.answer) return;
      if (event.seq > this.lastSeq) this.lastSeq = event.seq;
      observer.onEvent(event);
    }
  }

  /** The owner did not take the run (no responder, no answer in time, gone, fabric left): nothing ran there. */
  unanswered(why: string): void {
    const answer = this.answer;
    if (!answer) return;
    this.answer = undefined;
    this.unwatch();
    answer.reject(
      new PlacementError('owner_unreachable', `edge ${this.edgeId} did not take the run: ${why}`),
    );
  }

  /** The owner edge is gone (or the fabric connection): the run ends here unless it never started there. */
  lost(why: string): void {
    if (this.answer) {
      this.unanswered(why);
      return;
    }
    // Refused or unanswered before: the dispatch already failed (the run may be placed again meanwhile).
    if (this.started) this.observer?.onLost('node_disconnected', why);
  }

  /** This edge is leaving the fabric. */
  leave(): void {
    if (this.answer) {
      this.unanswered('this edge is leaving the fabric');
      return;
    }
    if (this.started) this.observer?.onLost('shutting_down', 'the edge is shutting down');
  }

  /**
   * Heartbeat: an owner that has not answered within the admission timeout is given up (and told to drop it).
   * It is still a live member, so the run may have started there: it fails here, it is not placed again.
   */
  expire(now: number): void {
    const answer = this.answer;
    if (!answer || now < this.admitBy) return;
    this.cancel('no answer in time');
    this.answer = undefined;
    this.unwatch();
    answer.reject(
      new PlacementError(
        'node_disconnected',
        `edge ${this.edgeId} did not answer the forwarded run within ${this.admitTimeoutMs} ms`,
      ),
    );
  }

  cancel(reason: string): void {
    if (this.released || this.cancelSent) return;
    this.cancelSent = true;
    try {
      this.transport.sendCancel(this, reason);
    } catch {
      this.lost('the cancel could not be sent to the owning edge');
    }
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.unwatch();
    this.observer = undefined;
    this.transport.released(this);
  }

  private answered(reply: ForwardReply): void {
    const answer = this.answer;
    if (!answer) return;
    this.answer = undefined;
    this.unwatch();
    if (!reply.ok) {
      answer.reject(
        new PlacementError('refused', reply.message, {
          remoteCode: reply.code,
          ...(reply.retryAfterSeconds !== null ? { retryAfterSeconds: reply.retryAfterSeconds } : {}),
        }),
      );
      return;
    }
    this.started = true;
    this.transport.accepted(this, this.principal);
    this.where = {
      nodeId: reply.nodeId,
      adapter: reply.adapter,
      target: reply.target,
      sessionId: reply.sessionId,
      providerId: reply.providerId ?? undefined,
      queueMs: reply.queueMs,
    };
    answer.resolve(this.where);
  }

  private unwatch(): void {
    if (this.signal) unwatchAbort(this.signal, this.onAbort);
    this.signal = undefined;
  }
}

/** The terminal part an outcome stands for (the owner's `done` without one). */
function terminalPartOf(
  outcome: RunOutcome,
): Extract<RunEventPart, { type: 'complete' | 'error' | 'cancelled' }> {
  switch (outcome.status) {
    case 'completed':
      return { type: 'complete', detail: outcome.detail, finishReason: outcome.finishReason, backendMs: 0 };
    case 'cancelled':
      return { type: 'cancelled', reason: outcome.reason };
    case 'error':
      return { type: 'error', code: outcome.code, message: outcome.message, retryable: true, backendMs: 0 };
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown outcome ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The owner's refusal as the requester reads it: the host's error code (a ServiceError's), or a node error. */
function refusalOf(error: unknown): ForwardReply {
  const coded = error as { code?: unknown; retryAfterSeconds?: unknown } | null;
  return {
    ok: false,
    code: error instanceof Error && typeof coded?.code === 'string' ? coded.code : 'node_error',
    message: errorText(error),
    retryAfterSeconds: typeof coded?.retryAfterSeconds === 'number' ? coded.retryAfterSeconds : null,
  };
}

/** A boot id as edges publish it (hex, at most 64 characters). */
function isBootId(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{1,64}$/.test(value);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
