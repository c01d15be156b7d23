// Surface-neutral edge operations. Every surface (console, OpenAI, A2A, admin, UI) calls these and nothing below
// them: a surface translates its protocol into a destination + run spec, and the run's parts back.
import type { AdapterType, ModelConfig } from '@iop/config';
import type {
  ChatMessage,
  CompletionInput,
  EmbeddingInput,
  GenerationParams,
  NodeCommandRequest,
  NodeCommandResponse,
  RunKind,
  ToolDefinition,
} from '@iop/wire';
import type { RunEventWithMeta, RunOutcomeStatus } from '../events/types.js';
import type { NodeSummary } from '../node/node-summary.js';
import type { ProviderStatus } from '../pool/provider-pool.js';
import type { Principal } from '../governance/principal.js';

export type { NodeSummary, ProviderHealthSummary } from '../node/node-summary.js';
export type { RunEventWithMeta, RunOutcomeStatus } from '../events/types.js';
export type { ProviderStatus } from '../pool/provider-pool.js';

/** Where a run goes. Both kinds go through admission: capacity, node bound, queue. */
export type RunDestination =
  /** A `models[]` id: the provider pool picks the provider (and so node, adapter and target). */
  | { kind: 'model'; model: string }
  /**
   * An explicit route (console, admin, A2A, OpenAI `model_routes` and fallback). `node` is an id or alias;
   * omitted = the only connected node. The run counts against the provider of that node whose adapter instance
   * and served model match, when one exists, and always against the node's `runtime.max_concurrency`.
   */
  | { kind: 'route'; node?: string; adapter: string; target: string };

/** The logical session a run uses on its target. */
export type SessionChoice =
  /** Exactly this session id (console, admin, A2A contexts): the node serializes runs of one session. */
  | { kind: 'fixed'; sessionId: string }
  /**
   * The lowest free slot of a base id on the chosen node/adapter/target (OpenAI: stateless requests never share a
   * busy CLI session): slot 0 is `baseId`, slot n is `<baseId>-<n+1>`.
   */
  | { kind: 'slot'; baseId: string };

/** What to run, independent of where. */
export interface RunSpec {
  session: SessionChoice;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** JSON text of an OpenAI-style tool_choice. */
  toolChoiceJson?: string;
  params?: GenerationParams;
  /** The caller asked for reasoning (input of a model's generation policy). */
  reasoningRequested?: boolean;
  workspace?: string;
  /** Run deadline in ms, passed to the node and enforced by the edge (plus a grace); 0/omitted = none. */
  timeoutMs?: number;
  metadata?: Record<string, string>;
  background?: boolean;
  /** Run id to use; generated when omitted. */
  runId?: string;
  /**
   * The caller reads the run as one result, not as it streams (RunRequest.collect): the node may ask its backend
   * for the whole answer at once. The run's events carry the same content either way.
   */
  collect?: boolean;
  /**
   * JSON object of request fields forwarded verbatim to an OpenAI-compatible backend (RunRequest.extra_body_json);
   * the surface sets it only when every backend the run may reach is openai_compat.
   */
  extraBodyJson?: string;
  /**
   * What the run asks for (RunRequest.kind); default chat. A completion carries `completion` and an embedding
   * `embedding` instead of messages; a node that does not list the kind in its registration is never sent it.
   */
  kind?: RunKind;
  completion?: CompletionInput;
  embedding?: EmbeddingInput;
  /**
   * The model sets `fetch_image_urls`: the node fetches the messages' image URLs for a backend that takes only
   * inline images (RunRequest.fetch_image_urls).
   */
  fetchImageUrls?: boolean;
}

/** Which door a run came through (metrics, logs, usage). */
export type RunSurface = 'openai' | 'a2a' | 'console' | 'admin' | 'ui';

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
}

export type RunOutcome =
  | { status: Extract<RunOutcomeStatus, 'completed'>; detail: string; finishReason: string }
  | { status: Extract<RunOutcomeStatus, 'error'>; code: string; message: string }
  | { status: Extract<RunOutcomeStatus, 'cancelled'>; reason: string };

export interface RunHandle {
  runId: string;
  nodeId: string;
  adapter: string;
  target: string;
  sessionId: string;
  /** The provider whose capacity the run holds; undefined for an explicit route no provider matches. */
  providerId: string | undefined;
  /** Milliseconds the run waited for capacity. */
  queueMs: number;
  /** `performance.now()` when the run request was handed to the node link (after the queue). */
  submittedAt: number;
  /**
   * The run's events, ending after its terminal part. Single consumer. For background runs it may be ignored:
   * events are still published on the event bus and the run is still tracked until it ends.
   */
  events: AsyncIterable<RunEventWithMeta>;
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

/** The `models[]` side of the routing table, as surfaces need it (catalogue, route resolution). */
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

export interface EdgeService {
  /**
   * Admits and starts a run: waits for capacity (FIFO per model or route, bounded by max_queue and
   * queue_timeout_ms), takes the session, applies the model's generation policy, sends the run and returns once
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
   * Cluster mode only: every node of the fabric, each with the edge it is connected to (`nodes list`). Absent on
   * a single edge, where `listNodes()` is the whole fabric.
   */
  clusterNodes?(): NodeSummary[];
  /** Every configured provider with its capacity, in_flight, queued and health. */
  providers(): ProviderStatus[];
  models: ModelCatalog;
  admissionTotals(): AdmissionTotals;
}
