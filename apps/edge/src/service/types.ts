// Surface-neutral edge operations. Every surface (console, OpenAI, A2A, admin, UI) calls these and nothing below
// them: a surface translates its protocol into a destination + run spec, and the run's parts back.
import type { NodeCommandRequest, NodeCommandResponse } from '@iop/wire';
import type { AdmissionTotals, ModelCatalog } from '../placement/edge-placement.js';
import type { RunDestination, RunEvents, RunOutcome, RunSpec, RunSurface } from '../placement/run-types.js';
import type { NodeSummary } from '../present/node-summary.js';
import type { ProviderStatus } from '../present/provider-status.js';
import type { Principal } from '../governance/principal.js';
import type { RunRegistry } from './run-registry.js';

export type { NodeSummary } from '../present/node-summary.js';
export type { RunEventWithMeta } from '../events/types.js';
export type { RunEvents } from '../placement/run-types.js';
export type { AdmissionTotals, ModelCatalog } from '../placement/edge-placement.js';
export type { RunDestination, RunOutcome, RunSpec, RunSurface } from '../placement/run-types.js';
export type { ProviderStatus } from '../present/provider-status.js';

/**
 * The agent run a child run belongs to (an agent's model call that came back up the node link), and the node whose
 * link carried the call. Capacity rule: agent-contract/inner/agent-runs.md.
 */
export interface ParentRef {
  runId: string;
  nodeId: string;
}

/** An agent run with children, as `nodes list` and `/providers` show it. */
export interface AgentRunView {
  runId: string;
  nodeId: string;
  /** Key id the agent runs as ('' = anonymous). */
  principal: string;
  model: string;
  /** Children not yet ended (queued or running). */
  liveChildren: number;
  /** Children submitted so far (ended ones included). */
  children: number;
  /** The agent run's own tokens so far (prompt + completion): what it reported less its children's. */
  tokens: number;
  /** Its children's tokens so far (ended ones, and what running ones delivered). */
  childTokens: number;
}

export interface SubmitOptions {
  surface: RunSurface;
  /**
   * Who the run is for (the API key the surface authenticated); its allow-list and limits are checked before any
   * capacity is taken. Omitted = anonymous: recorded in usage, never limited.
   */
  principal?: Principal;
  /**
   * The model name the caller asked for (the principal's allow-list and usage records); default: the
   * destination's model, or an explicit route's target.
   */
  model?: string;
  /** The caller's W3C `traceparent`; the run's spans continue that trace (and it travels to node and backend). */
  traceparent?: string;
  /**
   * Aborting it while the run is queued leaves the queue (`aborted`); once the run started it cancels the run on
   * the node (client disconnect). The run's capacity is released when it ends, whatever the caller does.
   */
  signal?: AbortSignal;
  /**
   * A child run: accepted only while this parent is a live run executing on `parent.nodeId` (else
   * `parent_not_live`), admitted under the parent's principal, charged to it, cancelled when it ends.
   */
  parent?: ParentRef;
}

export interface RunHandle {
  runId: string;
  nodeId: string;
  adapter: string;
  target: string;
  sessionId: string;
  /** The provider whose capacity the run holds; undefined for an explicit route no provider matches. */
  providerId: string | undefined;
  /** Milliseconds the run waited for capacity (every attempt's wait, after a retry). */
  queueMs: number;
  /**
   * Dispatches the run took: 1, or more after a retry before the first output (the `x-iop-attempts` header).
   * Node, adapter, target, session and provider name the latest attempt. Absent = 1.
   */
  readonly attempts?: number;
  /** `performance.now()` when the run request was handed to the node link (after the queue). */
  submittedAt: number;
  /**
   * The run's events, ending after its terminal part. Single consumer. For background runs it may be ignored:
   * events are still published on the event bus and the run is still tracked until it ends.
   */
  events: RunEvents;
  /** Settles when the run reaches its terminal part (never rejects). Capacity is released by then. */
  done: Promise<RunOutcome>;
  /** Sends CANCEL_RUN; the run then ends with a `cancelled` (or terminal) part. Idempotent. */
  cancel(reason?: string): Promise<void>;
  /** Milliseconds from submit to the terminal part, minus the backend time the node reported. */
  overheadMs(): number | undefined;
}

export interface NodeCommandInput {
  node?: string;
  request: NodeCommandRequest;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface SessionRef {
  node?: string;
  adapter: string;
  target: string;
  sessionId: string;
}

export interface EdgeService {
  /**
   * Admits and starts a run: waits for capacity (per model or route, fair share between keys and FIFO within a
   * key, bounded by max_queue and queue_timeout_ms), takes the session, applies the model's generation policy, sends the run and returns once
   * it is on the wire. The service owns the run from then on: one deadline, one cancel path, one release.
   */
  submitRun(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle>;
  /** Returns false when no run with that id is in flight. */
  cancelRun(runId: string, reason?: string): Promise<boolean>;
  /** Returns the node id the session lived on. */
  terminateSession(ref: SessionRef): Promise<string>;
  nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse>;
  /** `status` node command for a CLI target's usage limits. */
  usageStatus(ref: SessionRef): Promise<NodeCommandResponse>;
  listNodes(): NodeSummary[];
  /** Explicit id or alias; none given → the single connected node; otherwise a ServiceError. */
  resolveNode(ref?: string): NodeSummary;
  /**
   * Every node of the fabric (`nodes list`): in cluster mode each with the edge it is connected to; on a single
   * edge the same as listNodes().
   */
  fabricNodes(): NodeSummary[];
  /** True in cluster mode (this edge is one of a fabric's edges). */
  readonly inFabric: boolean;
  /**
   * The long-lived runs (background responses, A2A tasks) by (principal, kind, id): the surfaces register theirs
   * here and look them up here; in cluster mode a key this edge does not hold is looked up on the other edges.
   */
  readonly runRegistry: RunRegistry;
  /**
   * The principal `parent` runs as, while it is a live run executing on `parent.nodeId` on this edge (principal
   * undefined = anonymous); undefined when it is not.
   */
  resolveParent(parent: ParentRef): { principal: Principal | undefined } | undefined;
  /** This edge's runs that have children (or are agent runs with a model endpoint), with their children's totals. */
  agentRuns(): AgentRunView[];
  /** Every provider with its capacity, in_flight, queued and health (in cluster mode: of the whole fabric). */
  providers(): ProviderStatus[];
  models: ModelCatalog;
  admissionTotals(): AdmissionTotals;
}
