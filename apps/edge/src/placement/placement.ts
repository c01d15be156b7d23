// Placement: "where does this run execute". The run supervisor (service/run-supervisor.ts) calls it and never
// learns more than this interface, its errors (errors.ts) and its outcomes (outcomes.ts) say; behind it are this
// edge's provider pool (local-placement.ts) and, in cluster mode, the other edges of the fabric (RemoteEdges,
// implemented by cluster/edge-cluster.ts, through placement-router.ts). edge-placement.ts builds it for the service.
//
// A placement takes capacity for a run where it will execute (`reserve`: the pool's fair-share queue here; nothing on
// a remote edge, whose own supervisor does the exact admission), sends it there (`dispatch`), and reports what
// happens to it through an ExecutionObserver. It keeps no lifetime of its own: no deadline, no cancel grace, no
// usage record. The supervisor decides when the run ends and calls `release()` exactly once.
import type { RunEventWithMeta } from '../events/types.js';
import type { Principal } from '../governance/principal.js';
import type { ModelPolicy } from '../pool/provider-pool.js';
import type { RunDestination, RunEvents, RunOutcome, RunSpec, RunSurface } from './run-types.js';

/**
 * One attempt of a run as placement sees it, built by the supervisor: the spec by reference (never copied), and
 * what is resolved once per attempt and only read below — the model's policy and the run's affinity key.
 *
 * The rule for a live config refresh: the supervisor resolves the policy when an attempt starts (its token
 * estimate, retry limit, edge choice and affinity key use it) and again for a retry, so a retry is placed under
 * the config in force when it starts. The pool queues and picks by its live table, and the generation policy sent
 * to the node is the one the pool granted the attempt's slot under (Lease.policy): a run that waited in the queue
 * across a refresh runs with the policy in force when it left the queue. No layer looks the model up otherwise.
 */
export interface PlacementRequest {
  /** The run's id, chosen before placement (a forwarded run keeps it on its owner edge). */
  readonly runId: string;
  readonly destination: RunDestination;
  readonly spec: RunSpec;
  readonly surface: RunSurface;
  /** The model name the caller asked for (usage records on the owner edge). */
  readonly model: string;
  /** Whose run it is; a forwarded run carries it (and its limit lease) to the owner edge. */
  readonly principal: Principal | undefined;
  /** The caller's W3C traceparent. */
  readonly traceparent: string | undefined;
  /** Aborting it leaves the queue (the caller's cancel path before the run is dispatched). */
  readonly signal: AbortSignal | undefined;
  /** Providers an earlier attempt of this run failed on (a retry): the pool never places it there again. */
  readonly excludeProviders?: ReadonlySet<string>;
  /**
   * A child run's parent (RunRequest.parent_run_id): it takes provider capacity but no node max_concurrency slot,
   * and waits ahead of the model's other runs (agent-contract/inner/agent-runs.md).
   */
  readonly parentRunId?: string;
  /** The models[] entry of a model run, resolved for this attempt (Placement.modelPolicy); undefined for a route. */
  readonly modelPolicy: ModelPolicy | undefined;
  /**
   * The run's conversation affinity key for this attempt, scoped by principal and hashed (affinity-key.ts);
   * undefined when the model has no usable affinity or the run names no conversation.
   */
  readonly affinityKey: string | undefined;
}

/** What an execution reports about its run: implemented once, by the run supervisor. */
export interface ExecutionObserver {
  /** The next event from where the run executes; a terminal part ends the run. */
  onEvent(event: RunEventWithMeta): void;
  /** Where the run executes is gone without a terminal part (node disconnected, owner edge lost). */
  onLost(code: ExecutionLossCode, message: string): void;
}

export type ExecutionLossCode = 'node_disconnected' | 'shutting_down';

/** Where a dispatched run runs (what the run's handle reports). */
export interface Dispatched {
  readonly nodeId: string;
  readonly adapter: string;
  readonly target: string;
  readonly sessionId: string;
  readonly providerId: string | undefined;
  /** Milliseconds the run waited for capacity (on the owner edge for a forwarded run). */
  readonly queueMs: number;
}

/** Capacity held for one run where it will execute: the supervisor's `admitted` state. */
export interface Reservation {
  /** undefined = this edge; otherwise the id of the edge the run is forwarded to. */
  readonly edgeId: string | undefined;
  /** Node, adapter, target and provider as far as known here (all '' for a forwarded run until dispatched). */
  readonly nodeId: string;
  readonly adapter: string;
  readonly target: string;
  readonly providerId: string | undefined;
  /** Milliseconds the run waited for this reservation. */
  readonly queueMs: number;
  /**
   * Time the supervisor's one deadline allows past the run's timeout on top of its own grace: 0 here, and for a
   * forwarded run the time the owner's own end needs to travel back (its owner has the same deadline).
   */
  readonly deadlineSlackMs: number;
  /**
   * Sends the run (once). Resolves when it is on the wire to the node, or when the owner edge admitted and sent
   * it; from then on events and a loss go to `observer`. Rejects with a PlacementError (a node link's failure
   * too); `owner_unreachable` means no other edge took it (the supervisor may retry here).
   */
  dispatch(request: PlacementRequest, observer: ExecutionObserver, traceparent: string): Promise<Dispatched>;
  /** Asks where the run executes to stop it; the run still ends with a terminal part (or the supervisor's grace). */
  cancel(reason: string): void;
  /** Returns what the reservation holds (pool lease, session slot, node or fabric registration). Idempotent. */
  release(): void;
}

/** A run another edge forwarded here, as this edge's service started it (a RunHandle is one). */
export interface ServedRun {
  readonly runId: string;
  readonly nodeId: string;
  readonly adapter: string;
  readonly target: string;
  readonly sessionId: string;
  readonly providerId: string | undefined;
  readonly queueMs: number;
  readonly events: RunEvents;
  readonly done: Promise<RunOutcome>;
  cancel(reason?: string): Promise<void>;
}

/** How a forwarded run is admitted here: what the requesting edge sent with it. */
export interface ServedRunOptions {
  surface: RunSurface;
  model?: string;
  traceparent?: string;
  principal?: Principal;
  signal?: AbortSignal;
}

/**
 * Where runs other edges forward here are admitted (the service's `runHere`: its own run supervisor, placed on
 * this edge). Rejects with an error carrying the service's error `code` when the run is refused.
 */
export interface ForwardedRunHost {
  runHere(destination: RunDestination, spec: RunSpec, options: ServedRunOptions): Promise<ServedRun>;
}

export interface Placement {
  /**
   * The policy a run to `destination` is placed under, as the live config has it now (undefined for a route or an
   * id that is not a models[] entry). Read once per attempt, by the supervisor; carried on the PlacementRequest.
   */
  modelPolicy(destination: RunDestination): ModelPolicy | undefined;
  /**
   * The edge the run should execute on now; undefined = this edge. A model run whose conversation was last served
   * by a provider of another edge goes back there while it is free.
   */
  edgeFor(request: PlacementRequest): string | undefined;
  /**
   * Takes capacity for the run on `edgeId` (from edgeFor; undefined = this edge's pool), waiting in the pool's
   * queue when none is free (the request's signal leaves it). Throws PlacementError (the pool's refusals too).
   */
  reserve(request: PlacementRequest, edgeId: string | undefined): Promise<Reservation>;
}
