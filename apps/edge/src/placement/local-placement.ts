// The local side of placement: runs that execute on a node connected to this edge. `reserve` takes a pool lease
// (provider slot and node slot, waiting in the pool's fair-share queue under the run's principal, preferring the
// provider of the run's affinity key; queue timeout and max_queue stay pool
// mechanisms) and the session (fixed, or a free slot of a base id); `dispatch` applies the model's generation
// policy (the one the lease was granted under, in force when the run left the queue: a live refresh during the
// wait applies; placement.ts states the rule), registers the reservation with the
// node's link and sends the RunRequest. The reservation is the link's RunObserver for the run and hands each
// node event to the supervisor as it comes (one event object per node event, nothing else per event).
import { create, principalSessionId, RunKind, type RunEventEnvelope, type RunRequest } from '@iop/wire';
import type { NodeLink, RunObserver } from '../node/node-link.js';
import type { NodeRegistry } from '../node/node-registry.js';
import type { AcquireOptions, Lease, ProviderPool } from '../pool/provider-pool.js';
import { PlacementError } from './errors.js';
import { fromLowerError } from './lower-errors.js';
import { applyGenerationPolicy } from './generation-policy.js';
import { requireRunKind } from './run-kind-check.js';
import type { Dispatched, ExecutionObserver, PlacementRequest, Reservation } from './placement.js';
import type { SessionSlot, SessionSlots } from './session-slots.js';
import type { ModelAccessGrant } from './model-access.js';

export interface LocalPlacementDeps {
  registry: NodeRegistry;
  pool: ProviderPool;
  sessions: SessionSlots;
  /** The model endpoint a run of a `fabric_model` CLI profile gets (model-access.ts); none = no run gets one. */
  modelAccess?: ModelAccessGrant;
}

/** This edge's pool as a placement: `reserve` takes capacity here or throws PlacementError (the pool's refusals too). */
export class LocalPlacement {
  constructor(private readonly deps: LocalPlacementDeps) {}

  async reserve(request: PlacementRequest): Promise<Reservation> {
    try {
      return await this.reserveHere(request);
    } catch (error) {
      throw fromLowerError(error);
    }
  }

  private async reserveHere(request: PlacementRequest): Promise<Reservation> {
    const { destination, spec } = request;
    const { pool, sessions } = this.deps;
    const started = performance.now();
    const options = acquireOptions(request);
    const lease =
      destination.kind === 'model'
        ? await pool.acquire(destination.model, options)
        : await pool.acquireRoute(
            {
              nodeId: resolveNodeLink(this.deps.registry, destination.node).nodeId,
              adapter: destination.adapter,
              target: destination.target,
            },
            options,
          );
    const queueMs = performance.now() - started;
    const adapter = destination.kind === 'model' ? lease.adapter : destination.adapter;
    let session: SessionSlot;
    try {
      // The principal's own session: another key's run never reaches it (@iop/wire session-owner.ts).
      const owner = request.principal?.id;
      session =
        spec.session.kind === 'fixed'
          ? { sessionId: principalSessionId(spec.session.sessionId, owner), release: () => undefined }
          : sessions.acquire(
              lease.nodeId,
              adapter,
              lease.target,
              principalSessionId(spec.session.baseId, owner),
            );
    } catch (error) {
      lease.release();
      throw error;
    }
    return new LocalReservation(this.deps, lease, session, adapter, queueMs);
  }

  /** True when `ref` names a node connected here (id or alias). */
  hasNode(ref: string): boolean {
    return this.deps.registry.get(ref) !== undefined || this.deps.registry.findByAlias(ref).length > 0;
  }
}

/** A pool lease and a session on this edge, and, once dispatched, the run's registration with its node link. */
class LocalReservation implements Reservation, RunObserver {
  readonly edgeId = undefined;
  readonly deadlineSlackMs = 0;
  readonly nodeId: string;
  readonly target: string;
  readonly providerId: string | undefined;
  private link: NodeLink | undefined;
  private request: RunRequest | undefined;
  private observer: ExecutionObserver | undefined;
  private released = false;

  constructor(
    private readonly deps: LocalPlacementDeps,
    private readonly lease: Lease,
    private readonly session: SessionSlot,
    readonly adapter: string,
    readonly queueMs: number,
  ) {
    this.nodeId = lease.nodeId;
    this.target = lease.target;
    this.providerId = lease.providerId;
  }

  async dispatch(
    placed: PlacementRequest,
    observer: ExecutionObserver,
    traceparent: string,
  ): Promise<Dispatched> {
    const link = this.deps.registry.get(this.nodeId);
    if (!link || link.closed) {
      throw new PlacementError(
        'node_disconnected',
        `node ${this.nodeId} disconnected before the run started`,
      );
    }
    const { spec } = placed;
    requireRunKind(link, spec);
    // The policy the pool granted the slot under (in force when the run left the queue): no lookup here.
    const policy = this.lease.policy;
    const params = policy
      ? applyGenerationPolicy(
          spec.params ?? create.generationParams({}),
          policy.config,
          spec.reasoningRequested ?? false,
        )
      : spec.params;
    // Every field named (the type requires them all): one object, no default message to copy from.
    const request: RunRequest = {
      runId: placed.runId,
      adapter: this.adapter,
      target: this.target,
      sessionId: this.session.sessionId,
      background: spec.background ?? false,
      workspace: spec.workspace ?? '',
      messages: spec.messages,
      tools: spec.tools ?? [],
      toolChoiceJson: spec.toolChoiceJson ?? '',
      params,
      timeoutMs: spec.timeoutMs ?? 0,
      providerId: this.providerId ?? '',
      metadata: spec.metadata ?? {},
      traceparent,
      collect: spec.collect ?? false,
      extraBodyJson: spec.extraBodyJson ?? '',
      kind: spec.kind ?? RunKind.RUN_KIND_CHAT,
      completion: spec.completion,
      embedding: spec.embedding,
      fetchImageUrls: spec.fetchImageUrls ?? false,
      imageFetchMaxTotalBytes: spec.imageFetchMaxTotalBytes ?? 0,
      modelAccess: this.deps.modelAccess?.({
        runId: placed.runId,
        nodeId: this.nodeId,
        adapter: this.adapter,
        target: this.target,
      }),
      parentRunId: placed.parentRunId ?? '',
    };
    this.observer = observer;
    this.request = request;
    this.link = link;
    try {
      await link.startRun(request, this);
    } catch (error) {
      throw fromLowerError(error);
    }
    return this;
  }

  get sessionId(): string {
    return this.session.sessionId;
  }

  onEvent(event: RunEventEnvelope): void {
    this.observer?.onEvent({
      runId: event.runId,
      nodeId: this.nodeId,
      seq: event.seq,
      atUnixMs: event.atUnixMs,
      part: event.part,
    });
  }

  onLinkClosed(reason: string): void {
    this.observer?.onLost('node_disconnected', `node ${this.nodeId} disconnected (${reason})`);
  }

  cancel(reason: string): void {
    const { link, request } = this;
    if (!link || !request || link.closed || this.released) return;
    link
      .cancelRun(
        {
          runId: request.runId,
          adapter: request.adapter,
          target: request.target,
          sessionId: request.sessionId,
        },
        reason,
      )
      .catch(() => undefined);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.link && this.request) this.link.releaseRun(this.request.runId);
    this.observer = undefined;
    this.session.release();
    this.lease.release();
  }
}

/**
 * What the pool needs to queue and place the run: its abort signal, its principal's fair share (a forwarded run
 * carries its principal, so the owner edge queues it under the same key) and, for a model run, its affinity key.
 */
function acquireOptions(request: PlacementRequest): AcquireOptions {
  const { principal } = request;
  const options: AcquireOptions = {};
  if (request.signal) options.signal = request.signal;
  if (principal) {
    options.principalKey = principal.id;
    options.weight = principal.weight;
    options.priority = principal.priority;
  }
  // Computed once for the attempt (none when the model has one provider: nothing to choose).
  if (request.affinityKey !== undefined) options.affinityKey = request.affinityKey;
  if (request.excludeProviders) options.excludeProviders = request.excludeProviders;
  if (request.parentRunId !== undefined) options.child = true;
  return options;
}

/**
 * The connected node a reference names: an id, else a unique alias; none given = the only connected node.
 * Throws PlacementError (`node_not_found`, `node_ambiguous`, `no_nodes`).
 */
export function resolveNodeLink(registry: NodeRegistry, ref?: string): NodeLink {
  const wanted = ref?.trim() ?? '';
  if (wanted !== '') {
    const byId = registry.get(wanted);
    if (byId) return byId;
    const byAlias = registry.findByAlias(wanted);
    if (byAlias.length === 1 && byAlias[0]) return byAlias[0];
    if (byAlias.length > 1) {
      throw new PlacementError(
        'node_ambiguous',
        `alias '${wanted}' matches several connected nodes (${byAlias.map((link) => link.nodeId).join(', ')}); choose one by node id`,
      );
    }
    throw new PlacementError('node_not_found', `node '${wanted}' is not connected${connectedList(registry)}`);
  }
  const links = registry.links();
  if (links.length === 1 && links[0]) return links[0];
  if (links.length === 0) throw new PlacementError('no_nodes', 'no node is connected');
  throw new PlacementError(
    'node_ambiguous',
    `several nodes are connected (${links.map(describe).join(', ')}); choose one by node id or alias`,
  );
}

function describe(link: NodeLink): string {
  return link.info.alias && link.info.alias !== link.nodeId
    ? `${link.nodeId} (${link.info.alias})`
    : link.nodeId;
}

function connectedList(registry: NodeRegistry): string {
  const links = registry.links();
  return links.length === 0 ? '; no node is connected' : `; connected: ${links.map(describe).join(', ')}`;
}
