// Cluster mode (`cluster.enabled`): several edges with the same edge.yaml form one fabric over NATS. Off by
// default; a single edge never loads this path. What goes over NATS (agent-contract/inner/edge-cluster.md):
//
//   KV `iop_edges`   key <edge id>  → EdgeState JSON: connected nodes and their providers' figures; put on every
//                                     change (coalesced) and every heartbeat; deleted on a clean stop.
//   KV `iop_nodes`   key <node id>  → { edgeId, claimedAtUnixMs }: the node's owner, written by compare-and-set
//                                     on registration (the newest claim wins; the older edge drops its link).
//   iop.run.<edge>                  request/reply: a forwarded run; the owner does the exact admission.
//   iop.events.<edge>.<forward id>  the owner streams the run's events, then `done`, to the requesting edge.
//   iop.cancel.<edge>               a requester cancels (or its client left) a run it forwarded to <edge>.
//   iop.limits.<edge>               a key's limits, counted on its home edge (cluster-limits.ts).
//
// Both buckets have a TTL of cluster.state_ttl_ms. Liveness uses the receiver's clock: an edge silent for longer
// than the TTL is gone; runs forwarded to it end with an error, runs it forwarded here are cancelled.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { connect, credsAuthenticator, type Msg, type NatsConnection } from '@nats-io/transport-node';
import type { Registry } from 'prom-client';
import type { ClusterConfig, EdgeConfig } from '@iop/config';
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import type { Clock } from '../clock.js';
import type { EventBus, EventSubscription } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { EdgeServiceImpl } from '../service/edge-service.js';
import { ServiceError, type ServiceErrorCode } from '../service/errors.js';
import type {
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunOutcome,
  RunSpec,
  RunSurface,
  SubmitOptions,
} from '../service/types.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import { admissionTokens } from '../governance/admission-tokens.js';
import { isGovernanceError } from '../governance/errors.js';
import type { Governor } from '../governance/governor.js';
import { allowsModel } from '../governance/principal.js';
import {
  ClusterLease,
  createClusterLimits,
  hasLimits,
  type ClusterLimits,
  type LeaseRef,
} from './cluster-limits.js';
import { registerClusterMetrics, type ClusterMetrics } from './cluster-metrics.js';
import { createClusterRefresher, type ClusterRefresher } from './cluster-refresh.js';
import { createPeerCalls, type PeerCalls } from './peer-calls.js';
import { createClusterUsage, type ClusterUsage } from './cluster-usage.js';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import { fromWirePrincipal, toWirePrincipal, type WirePrincipal } from './wire-principal.js';
import { ClusterView, type EdgeState } from './cluster-view.js';

export const EDGES_BUCKET = 'iop_edges';
/** Events per message at most (a message stays far below NATS' payload limit). */
const MAX_EVENT_BATCH = 64;
/** State changes within this window go out in one put. */
const PUBLISH_COALESCE_MS = 50;
export const NODES_BUCKET = 'iop_nodes';

export interface EdgeClusterOptions {
  config: EdgeConfig;
  /** The local service: admission of local and forwarded-in runs. */
  service: EdgeServiceImpl;
  /** Node connect/disconnect events (ownership and state publishing). */
  events: EventBus;
  /** Node ids connected here now. */
  connectedNodes(): string[];
  /** Closes this edge's link to a node another edge claimed after it (`replaced`). */
  dropNode(nodeId: string): void;
  logger: Logger;
  clock: Clock;
  /** How long a forwarded run may wait for its admission at the owning edge (default 120 s). */
  forwardAdmitTimeoutMs?: number;
  /** Events buffered per forwarded run before it is ended as a stuck reader (default 4096). */
  forwardBufferSize?: number;
  /** Where the iop_cluster_* metrics go (the edge's /metrics registry); none = not exported. */
  registry?: Registry;
  /** This edge's governor: with it, API-key limits are counted cluster-wide on each key's home edge. */
  governor?: Governor;
  /** This edge's usage totals (its usage store): with it, usage is answered cluster-wide. */
  usage?: (query: UsageQuery) => UsageRow[];
}

export interface EdgeCluster {
  readonly edgeId: string;
  /** The local service wrapped: model runs placed cluster-wide, providers() shows the whole pool. */
  readonly service: EdgeServiceImpl;
  readonly view: ClusterView;
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
  lease?: LeaseRef;
}

type ForwardReply =
  | {
      ok: true;
      runId: string;
      nodeId: string;
      adapter: string;
      target: string;
      sessionId: string;
      providerId: string | null;
      queueMs: number;
    }
  | { ok: false; code: ServiceErrorCode; message: string; retryAfterSeconds: number | null };

/**
 * On a run's events subject: first the owner's ForwardReply (the answer to the forward, sent to its reply
 * subject), then events in batches (what the run produced within one turn of the event loop, a terminal part at
 * once), and `done` only when the run ended without a terminal part.
 */
type ForwardMessage = { t: 'events'; events: RunEventWithMeta[] } | { t: 'done'; outcome: RunOutcome };

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
  const nc = await connect(natsConnectOptions(cluster, `iop-edge ${config.edge.id}`));
  try {
    const kvm = new Kvm(nc);
    const edgesKv = await kvm.create(EDGES_BUCKET, { ttl: cluster.state_ttl_ms, history: 1 });
    const nodesKv = await kvm.create(NODES_BUCKET, { ttl: cluster.state_ttl_ms, history: 1 });
    return await ClusterImpl.start(options, nc, edgesKv, nodesKv);
  } catch (error) {
    await nc.close().catch(() => undefined);
    logger.error({ error: errorText(error) }, 'cluster: NATS setup failed');
    throw error;
  }
}

/** Forward failures before the owner answered (no responder, timeout, owner gone): retried on this edge. */
const unreachableOwners = new WeakSet<ServiceError>();

interface Forwarded {
  forwardId: string;
  owner: string;
  stream: ForwardedStream;
}

interface Served {
  from: string;
  /** Where the run's events go. */
  subject: string;
  controller: AbortController;
  handle: RunHandle | undefined;
}

class ClusterImpl implements EdgeCluster {
  readonly edgeId: string;
  readonly view: ClusterView;
  readonly service: EdgeServiceImpl;
  private readonly forwarded = new Map<string, Forwarded>();
  /** Forwarded runs by the owner's run id (cancelRun). */
  private readonly forwardedByRunId = new Map<string, Forwarded>();
  private readonly served = new Map<string, Served>();
  /** Revision of this edge's claim per node id. */
  private readonly claims = new Map<string, number>();
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private currentConfig: () => EdgeConfig;
  readonly peers: PeerCalls;
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
    private readonly nc: NatsConnection,
    private readonly edgesKv: KV,
    private readonly nodesKv: KV,
  ) {
    this.edgeId = options.config.edge.id;
    this.view = new ClusterView(this.edgeId, options.config.cluster.state_ttl_ms, () => options.clock.now());
    this.currentConfig = () => options.config;
    this.peers = createPeerCalls({
      nc,
      edgeId: this.edgeId,
      liveEdges: () => this.view.states().map((state) => state.edgeId),
    });
    this.limits = options.governor
      ? createClusterLimits({
          nc,
          edgeId: this.edgeId,
          liveEdges: () => this.view.states().map((state) => state.edgeId),
          governor: options.governor,
          logger: options.logger,
          now: () => options.clock.now(),
          leaseTtlMs: 2 * options.config.cluster.state_ttl_ms,
          // Budgets count every edge's usage store (created below; asked only once a key is used).
          spentElsewhere: (principalId, sinceMs) =>
            this.clusterUsage?.spentElsewhere(principalId, sinceMs) ?? Promise.resolve(0),
        })
      : undefined;
    this.clusterUsage = options.usage
      ? createClusterUsage({ peers: this.peers, local: options.usage })
      : undefined;
    this.service = this.wrap(options.service);
    this.metrics = options.registry
      ? registerClusterMetrics(options.registry, { states: () => [this.state(), ...this.view.states()] })
      : undefined;
  }

  static async start(options: EdgeClusterOptions, nc: NatsConnection, edgesKv: KV, nodesKv: KV) {
    const impl = new ClusterImpl(options, nc, edgesKv, nodesKv);
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

    this.nc.subscribe(`iop.run.${this.edgeId}`, {
      callback: (error, msg) => {
        if (!error) void this.serveForward(msg);
      },
    });
    this.nc.subscribe(`iop.cancel.${this.edgeId}`, {
      callback: (error, msg) => {
        if (error) return;
        try {
          const { forwardId, reason } = decode<{ forwardId: string; reason: string }>(msg.data);
          this.cancelServed(forwardId, reason);
        } catch {
          this.logger.warn({}, 'cluster: malformed cancel message ignored');
        }
      },
    });
    this.nc.subscribe(`iop.events.${this.edgeId}.*`, {
      callback: (error, msg) => {
        if (error) return;
        const forwardId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
        const forward = this.forwarded.get(forwardId);
        if (!forward) return;
        if (msg.headers?.code === 503) {
          // The server's "no responders" to the forward: nothing listens on iop.run.<owner> (the edge is gone).
          forward.stream.admit(new Error(`no responders on iop.run.${forward.owner}`));
          return;
        }
        try {
          forward.stream.receive(decode<ForwardMessage | ForwardReply>(msg.data));
        } catch {
          forward.stream.fail('node_error', 'malformed event from the owning edge');
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
    this.timers.push(
      setInterval(() => {
        void this.heartbeat();
      }, cluster.heartbeat_ms),
    );
    for (const timer of this.timers) timer.unref?.();
    void this.nc.closed().then(() => {
      for (const forward of [...this.forwarded.values()]) {
        forward.stream.fail('node_disconnected', 'the edge lost its NATS connection');
      }
    });
    this.logger.info({ edgeId: this.edgeId, servers: cluster.nats.servers }, 'cluster: joined');
  }

  private async follow(
    iterator: AsyncIterable<KvWatchEntry>,
    handle: (entry: KvWatchEntry) => void,
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

  private onEdgeEntry(entry: KvWatchEntry): void {
    if (entry.key === this.edgeId) return;
    if (entry.operation !== 'PUT') {
      this.view.remove(entry.key);
      this.edgeGone(entry.key);
      return;
    }
    const state = entry.json<EdgeState>();
    const ours = configRevision(this.currentConfig());
    if (state.configRevision !== ours) {
      this.logger.warn(
        { edgeId: state.edgeId, revision: state.configRevision, ours },
        'cluster: an edge runs a different config revision',
      );
    }
    this.view.update(state);
  }

  private onNodeEntry(entry: KvWatchEntry): void {
    if (entry.operation !== 'PUT') return;
    const claim = entry.json<NodeClaim>();
    const mine = this.claims.get(entry.key);
    if (claim.edgeId === this.edgeId || mine === undefined || entry.revision <= mine) return;
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
      nodeSummaries: this.options.service
        .listNodes()
        .filter((node) => nodes.has(node.nodeId))
        .map(({ discovered: _discovered, ...node }) => node),
      providers: this.options.service.providers().filter((provider) => nodes.has(provider.nodeId)),
      configRevision: configRevision(this.currentConfig()),
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
        'cluster: config file unreadable; refreshes from peers keep their edge keys',
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
    setTimeout(() => {
      this.publishScheduled = false;
      this.publishState().catch((error: unknown) =>
        this.logger.warn({ error: errorText(error) }, 'cluster: state publish failed'),
      );
    }, PUBLISH_COALESCE_MS).unref?.();
  }

  private async heartbeat(): Promise<void> {
    if (this.closing) return;
    for (const gone of this.view.sweep()) this.edgeGone(gone);
    this.limits?.tick();
    const now = performance.now();
    for (const forward of [...this.forwarded.values()]) {
      if (!this.view.isLive(forward.owner)) this.endForwardsTo(forward.owner);
      else forward.stream.expire(now);
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

  /** An edge left or went silent: end what it owned for us and what we run for it. */
  private edgeGone(edgeId: string): void {
    this.endForwardsTo(edgeId);
    this.limits?.edgeGone(edgeId);
    for (const [forwardId, served] of this.served) {
      if (served.from === edgeId) this.cancelServed(forwardId, `edge ${edgeId} is gone`);
    }
  }

  private endForwardsTo(edgeId: string): void {
    for (const forward of [...this.forwarded.values()]) {
      if (forward.owner === edgeId) {
        forward.stream.fail('node_disconnected', `edge ${edgeId}, which owned the run's node, is gone`);
      }
    }
  }

  // ---- owner side: runs forwarded to this edge -------------------------------------------------------------

  private async serveForward(msg: Msg): Promise<void> {
    let request: ForwardRequest;
    try {
      request = decode<ForwardRequest>(msg.data);
      if (typeof request.forwardId !== 'string' || typeof request.from !== 'string') throw new Error('shape');
    } catch {
      msg.respond(
        encode({ ok: false, code: 'invalid_request', message: 'malformed forward', retryAfterSeconds: null }),
      );
      return;
    }
    const served: Served = {
      from: request.from,
      subject: `iop.events.${request.from}.${request.forwardId}`,
      controller: new AbortController(),
      handle: undefined,
    };
    this.served.set(request.forwardId, served);
    const principal = request.principal ? this.principalOf(request.principal, request.lease) : undefined;
    let handle: RunHandle;
    try {
      handle = await this.options.service.submitRun(request.destination, request.spec, {
        surface: request.surface,
        ...(request.model !== undefined ? { model: request.model } : {}),
        ...(request.traceparent !== undefined ? { traceparent: request.traceparent } : {}),
        ...(principal ? { principal } : {}),
        signal: served.controller.signal,
      });
    } catch (error) {
      this.served.delete(request.forwardId);
      // Refused before the governor took the lease (or it already finished it: idempotent).
      principal?.lease?.finish(0);
      const reply: ForwardReply =
        error instanceof ServiceError
          ? {
              ok: false,
              code: error.code,
              message: error.message,
              retryAfterSeconds: error.retryAfterSeconds ?? null,
            }
          : { ok: false, code: 'node_error', message: errorText(error), retryAfterSeconds: null };
      msg.respond(encode(reply));
      return;
    }
    served.handle = handle;
    this.metrics?.served(request.from);
    const reply: ForwardReply = {
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
    // that write comes first), and always before the run's first events: every flush sends it first.
    let replied = false;
    let batch: RunEventWithMeta[] = [];
    const flush = (): void => {
      if (!replied) {
        replied = true;
        msg.respond(encode(reply));
      }
      if (batch.length === 0) return;
      this.nc.publish(subject, encode({ t: 'events', events: batch } satisfies ForwardMessage));
      batch = [];
    };
    setImmediate(flush);
    try {
      for await (const event of handle.events) {
        batch.push(event);
        const terminal = isTerminalPart(event.part);
        terminalSent ||= terminal;
        if (terminal || batch.length >= MAX_EVENT_BATCH) flush();
        else if (batch.length === 1) setImmediate(flush);
      }
    } catch (error) {
      this.logger.warn(
        { runId: handle.runId, error: errorText(error) },
        'cluster: forwarded run stream failed',
      );
    }
    flush();
    const outcome = await handle.done;
    // Runs ended by this edge's own stop were already reported to the requester as an error; a terminal part
    // already decided the outcome there (the requester ends on it), so `done` goes only when none was sent.
    if (!this.served.delete(request.forwardId) || terminalSent || this.nc.isClosed()) return;
    this.nc.publish(subject, encode({ t: 'done', outcome } satisfies ForwardMessage));
  }

  /** A forwarded run's principal, with the lease its requester reserved (released here when the run ends). */
  private principalOf(wire: WirePrincipal, lease: LeaseRef | undefined) {
    const principal = fromWirePrincipal(wire);
    return lease && this.limits ? this.limits.withLease(principal, lease) : principal;
  }

  private cancelServed(forwardId: string, reason: string): void {
    const served = this.served.get(forwardId);
    if (!served) return;
    if (served.handle) void served.handle.cancel(reason);
    else served.controller.abort(new Error(reason));
  }

  // ---- requester side: runs this edge forwards ---------------------------------------------------------------

  private async forward(
    owner: string,
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
  ): Promise<RunHandle> {
    // Unique per requester (its subject) and, with this process's random prefix, at every owner.
    const forwardId = `${this.forwardPrefix}${(this.forwardSequence += 1).toString(36)}`;
    const stream = new ForwardedStream(
      this.options.forwardBufferSize ?? 4096,
      (reason) => this.nc.publish(`iop.cancel.${owner}`, encode({ forwardId, reason })),
      () => {
        this.forwarded.delete(forwardId);
        if (stream.runId !== undefined) this.forwardedByRunId.delete(stream.runId);
      },
    );
    const forward: Forwarded = { forwardId, owner, stream };
    this.forwarded.set(forwardId, forward);
    const request: ForwardRequest = {
      forwardId,
      from: this.edgeId,
      destination,
      spec,
      surface: options.surface,
      ...(options.model !== undefined ? { model: options.model } : {}),
      ...(options.traceparent !== undefined ? { traceparent: options.traceparent } : {}),
      ...(options.principal ? { principal: toWirePrincipal(options.principal) } : {}),
      ...(options.principal?.lease instanceof ClusterLease ? { lease: options.principal.lease.ref } : {}),
    };
    const onAbort = () => stream.cancel('client disconnected');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    stream.onEnd(() => options.signal?.removeEventListener('abort', onAbort));
    let reply: ForwardReply;
    try {
      // Not nc.request: the owner's answer comes first on this run's events subject (one subscription for all
      // forwarded runs, same order as the events), so no per-request inbox, timer promise or error object.
      const admission = stream.admission(this.options.forwardAdmitTimeoutMs ?? 120_000);
      this.nc.publish(`iop.run.${owner}`, encode(request), {
        reply: `iop.events.${this.edgeId}.${forwardId}`,
      });
      reply = await admission;
    } catch (error) {
      stream.fail('node_disconnected', `forwarding to edge ${owner} failed: ${errorText(error)}`);
      const unreachable = new ServiceError(
        'node_disconnected',
        `edge ${owner} did not take the run: ${errorText(error)}`,
        { cause: error },
      );
      unreachableOwners.add(unreachable);
      throw unreachable;
    }
    if (!reply.ok) {
      stream.fail(reply.code, reply.message);
      throw new ServiceError(reply.code, reply.message, {
        ...(reply.retryAfterSeconds !== null ? { retryAfterSeconds: reply.retryAfterSeconds } : {}),
      });
    }
    this.metrics?.forwarded(owner);
    // The owner holds the lease now (it reports it open and finishes it); a run that ends here (the owner went
    // away) was never finished by the owner's governor: release it from here.
    const lease = options.principal?.lease;
    if (lease instanceof ClusterLease) lease.handOff();
    if (lease) stream.onEnd(() => stream.endedHere && lease.finish(0));
    if (options.signal?.aborted) stream.cancel('client disconnected');
    stream.runId = reply.runId;
    if (!stream.ended) this.forwardedByRunId.set(reply.runId, forward);
    if (spec.timeoutMs) stream.deadline(spec.timeoutMs + 10_000);
    return stream.handle({
      runId: reply.runId,
      nodeId: reply.nodeId,
      adapter: reply.adapter,
      target: reply.target,
      sessionId: reply.sessionId,
      providerId: reply.providerId ?? undefined,
      queueMs: reply.queueMs,
    });
  }

  private wrap(base: EdgeServiceImpl): EdgeServiceImpl {
    const place = (destination: RunDestination): string | undefined => {
      if (destination.kind === 'model') {
        const model = base.models.get(destination.model);
        if (!model) return undefined;
        const placement = this.view.place(Object.keys(model.providers), base.providers());
        return placement.kind === 'remote' ? placement.edgeId : undefined;
      }
      const ref = destination.node?.trim() ?? '';
      if (ref === '') return undefined;
      const local = base.listNodes().some((node) => node.nodeId === ref || node.alias === ref);
      return local ? undefined : this.view.edgeOfNode(ref);
    };
    const route = async (
      destination: RunDestination,
      spec: RunSpec,
      options: SubmitOptions,
    ): Promise<RunHandle> => {
      const owner = this.closing ? undefined : place(destination);
      if (owner === undefined) return base.submitRun(destination, spec, options);
      try {
        return await this.forward(owner, destination, spec, options);
      } catch (error) {
        // The owner never took it (gone, or went away while the run waited there): admission here decides.
        if (!(error instanceof ServiceError) || !unreachableOwners.has(error)) throw error;
        this.logger.warn({ edgeId: owner, error: error.message }, 'cluster: forward failed; admitting here');
        return base.submitRun(destination, spec, options);
      }
    };
    return {
      get inFlightRuns() {
        return base.inFlightRuns;
      },
      shutdown: () => base.shutdown(),
      submitRun: async (destination, spec, options) => {
        const principal = options.principal;
        if (!this.limits || !principal || principal.lease || !hasLimits(principal)) {
          return route(destination, spec, options);
        }
        const model =
          options.model ?? (destination.kind === 'model' ? destination.model : destination.target);
        // A model outside the allow-list takes nothing: the admitting governor refuses it as usual.
        if (!allowsModel(principal, model)) return route(destination, spec, options);
        let leased;
        try {
          // Prompt + the answer's limit, as the local service reserves it (admission-tokens.ts).
          const policy = destination.kind === 'model' ? base.models.get(destination.model) : undefined;
          leased = await this.limits.reserve(
            principal,
            admissionTokens(spec.messages, {
              requested: spec.params?.maxTokens,
              modelDefault: policy?.default_max_tokens,
              modelMinimum: policy?.min_max_tokens,
              fallback: this.options.config.usage.reserve_max_tokens,
            }),
          );
        } catch (error) {
          if (!isGovernanceError(error)) throw error;
          // reserve checks no allow-list, so the code is one of the limits' (ServiceError has the same codes).
          const code = error.code === 'model_not_allowed' ? 'model_not_found' : error.code;
          throw new ServiceError(code, error.message, {
            cause: error,
            ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
          });
        }
        try {
          return await route(destination, spec, { ...options, principal: leased });
        } catch (error) {
          // Refused before or during admission: a governor that took the lease already finished it (idempotent).
          leased.lease?.finish(0);
          throw error;
        }
      },
      cancelRun: (runId, reason) => {
        const forward = this.forwardedByRunId.get(runId);
        if (!forward) return base.cancelRun(runId, reason);
        forward.stream.cancel(reason ?? 'cancelled');
        return Promise.resolve(true);
      },
      terminateSession: (ref) => base.terminateSession(ref),
      nodeCommand: (input) => base.nodeCommand(input),
      usageStatus: (ref) => base.usageStatus(ref),
      listNodes: () => base.listNodes(),
      clusterNodes: () => {
        const local = base.listNodes().map((node) => ({ ...node, edgeId: this.edgeId }));
        const here = new Set(local.map((node) => node.nodeId));
        return [...local, ...this.view.remoteNodes().filter((node) => !here.has(node.nodeId))];
      },
      resolveNode: (ref) => base.resolveNode(ref),
      providers: () => this.view.merge(base.providers()),
      models: base.models,
      admissionTotals: () => base.admissionTotals(),
    };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      this.subscription?.close();
      this.limits?.close();
      this.clusterUsage?.close();
      for (const stop of this.stopWatches) stop();
      this.clusterRefresher?.close();
      for (const forward of [...this.forwarded.values()]) {
        forward.stream.fail('shutting_down', 'the edge is shutting down');
      }
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

/** What the owner's answer says of the run; the rest of a RunHandle is the requesting edge's own. */
type HandleInfo = Pick<
  RunHandle,
  'runId' | 'nodeId' | 'adapter' | 'target' | 'sessionId' | 'providerId' | 'queueMs'
>;

/**
 * The requesting edge's side of a forwarded run: a bounded single-consumer event queue, the outcome, one cancel
 * path and exactly one end (owner's `done`, owner gone, deadline, overflow or shutdown).
 */
export class ForwardedStream {
  runId: string | undefined;
  private readonly buffer: RunEventWithMeta[] = [];
  private wake: (() => void) | undefined;
  private outcome: RunOutcome | undefined;
  private resolveDone!: (outcome: RunOutcome) => void;
  readonly done: Promise<RunOutcome> = new Promise((resolve) => (this.resolveDone = resolve));
  private readonly endListeners: (() => void)[] = [];
  private cancelSent = false;
  private readonly submittedAt = performance.now();
  private endedAt: number | undefined;
  private backendMs = 0;
  private lastSeq = 0;
  private admitted: ((reply: ForwardReply | Error) => void) | undefined;
  /** performance.now() by which the owner must answer, and by which the run must end (deadline). */
  private admitBy = Infinity;
  private admitTimeoutMs = 0;
  private endBy = Infinity;
  private endTimeoutMs = 0;

  constructor(
    private readonly capacity: number,
    private readonly sendCancel: (reason: string) => void,
    onFinished: () => void,
  ) {
    this.endListeners.push(onFinished);
  }

  get ended(): boolean {
    return this.outcome !== undefined;
  }

  onEnd(listener: () => void): void {
    if (this.ended) listener();
    else this.endListeners.push(listener);
  }

  /**
   * The owner's answer to the forward: resolves with its reply, rejects when it says nothing within `timeoutMs`,
   * when nothing listens on its subject, or when the stream ends first (the owner went away while the run
   * waited in its queue: the heartbeat sweep ends the stream).
   */
  admission(timeoutMs: number): Promise<ForwardReply> {
    // No timer per run: the heartbeat's expire() checks the time.
    this.admitBy = performance.now() + timeoutMs;
    this.admitTimeoutMs = timeoutMs;
    return new Promise<ForwardReply>((resolve, reject) => {
      const settle = (reply: ForwardReply | Error): void => {
        if (this.admitted === undefined) return;
        this.admitted = undefined;
        if (reply instanceof Error) reject(reply);
        else resolve(reply);
      };
      this.admitted = settle;
      this.onEnd(() =>
        settle(
          new Error(
            this.outcome?.status === 'error' ? this.outcome.message : 'the run ended before it was admitted',
          ),
        ),
      );
    });
  }

  /** Settles a pending admission (the owner's reply, or why there is none); later calls are ignored. */
  admit(reply: ForwardReply | Error): void {
    this.admitted?.(reply);
  }

  receive(message: ForwardMessage | ForwardReply): void {
    if ('ok' in message) {
      this.admit(message);
      return;
    }
    if (message.t === 'events') {
      for (const event of message.events) this.receiveEvent(event);
      return;
    }
    if (this.ended) return;
    if (message.t === 'done') {
      // Only reached when no terminal part arrived (the owner is shutting down).
      const outcome = message.outcome;
      if (outcome.status === 'error') this.fail(outcome.code, outcome.message);
      else if (outcome.status === 'cancelled') {
        this.push({ type: 'cancelled', reason: outcome.reason });
        this.end(outcome);
      } else {
        this.push({
          type: 'complete',
          detail: outcome.detail,
          finishReason: outcome.finishReason,
          backendMs: this.backendMs,
        });
        this.end(outcome);
      }
      return;
    }
  }

  private receiveEvent(event: RunEventWithMeta): void {
    if (this.ended) return;
    if (this.buffer.length >= this.capacity) {
      this.cancel('reader too slow');
      this.fail('node_error', 'the forwarded run produced events faster than they were read');
      return;
    }
    this.lastSeq = event.seq;
    if (event.part.type === 'complete' || event.part.type === 'error') this.backendMs = event.part.backendMs;
    this.buffer.push(event);
    const part = event.part;
    // The terminal part decides the outcome (as on the owner): no need to wait for its `done`.
    if (part.type === 'complete') {
      this.end({ status: 'completed', detail: part.detail, finishReason: part.finishReason });
    } else if (part.type === 'error') {
      this.end({ status: 'error', code: part.code, message: part.message });
    } else if (part.type === 'cancelled') {
      this.end({ status: 'cancelled', reason: part.reason });
    } else {
      this.wake?.();
    }
  }

  /** A part made here (the owner could not send it), after the last one received. */
  private push(part: RunEventPart): void {
    this.buffer.push({
      runId: this.runId ?? '',
      nodeId: '',
      seq: ++this.lastSeq,
      atUnixMs: Date.now(),
      part,
    });
    this.wake?.();
  }

  /** True when the run ended here rather than on the owner's word (owner gone, deadline, overflow, stop). */
  endedHere = false;

  /** Ends the run here with an error part (the owner is gone or never took it); idempotent. */
  fail(code: string, message: string): void {
    if (this.ended) return;
    this.endedHere = true;
    this.push({ type: 'error', code, message, retryable: true, backendMs: 0 });
    this.end({ status: 'error', code, message });
  }

  cancel(reason: string): void {
    if (this.ended || this.cancelSent) return;
    this.cancelSent = true;
    try {
      this.sendCancel(reason);
    } catch {
      this.fail('node_disconnected', 'the cancel could not be sent to the owning edge');
    }
  }

  /** The run must end within `ms` (checked by expire(), on every heartbeat: no timer per run). */
  deadline(ms: number): void {
    if (this.ended) return;
    this.endBy = performance.now() + ms;
    this.endTimeoutMs = ms;
  }

  /** Ends what overran its time: an owner that never answered, a run past its deadline. */
  expire(now: number): void {
    if (this.admitted !== undefined && now >= this.admitBy) {
      this.admit(new Error(`no answer within ${this.admitTimeoutMs} ms`));
    }
    if (!this.ended && now >= this.endBy) {
      this.cancel('deadline');
      this.fail('timeout', `the forwarded run did not end within ${this.endTimeoutMs} ms`);
    }
  }

  private end(outcome: RunOutcome): void {
    this.outcome = outcome;
    this.endedAt = performance.now();
    for (const listener of this.endListeners.splice(0)) listener();
    this.resolveDone(outcome);
    this.wake?.();
  }

  handle(info: HandleInfo): RunHandle {
    for (const event of this.buffer) if (event.runId === '') event.runId = info.runId;
    const next = (): RunEventWithMeta | undefined => this.buffer.shift();
    const ended = (): boolean => this.ended;
    const wait = (): Promise<void> =>
      new Promise<void>((resolve) => {
        this.wake = () => {
          this.wake = undefined;
          resolve();
        };
      });
    return {
      ...info,
      submittedAt: this.submittedAt,
      done: this.done,
      events: {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            const event = next();
            if (event) {
              yield event;
              continue;
            }
            if (ended()) return;
            await wait();
          }
        },
      },
      cancel: (reason) => {
        this.cancel(reason ?? 'cancelled');
        return Promise.resolve();
      },
      overheadMs: () =>
        this.endedAt === undefined ? undefined : this.endedAt - this.submittedAt - this.backendMs,
    };
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
