// What a run is, independent of where it executes and of the door it came through: its destination, its spec,
// its surface and its outcome. These types sit below the service and placement (both use them); service/types.ts
// re-exports them for the surfaces.
import type {
  ChatMessage,
  CompletionInput,
  EmbeddingInput,
  GenerationParams,
  RunKind,
  ToolDefinition,
} from '@iop/wire';
import type { RunEventWithMeta, RunOutcomeStatus } from '../events/types.js';

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
  /**
   * With `fetchImageUrls`: the bytes the node may fetch for all the run's image URLs together (the model's
   * `image_limits.max_total_bytes`, RunRequest.image_fetch_max_total_bytes); absent = the node's default.
   */
  imageFetchMaxTotalBytes?: number;
  /**
   * The conversation this run continues, as the caller named it (`x-session-id`, OpenAI `user`, Anthropic
   * `metadata.user_id`, A2A context id): the pool prefers the provider that served it last (affinity-key.ts
   * scopes it by principal). Travels with a forwarded run, so the owner edge places it the same way.
   */
  affinityKey?: string;
}

/** Which door a run came through (metrics, logs, usage). */
export type RunSurface = 'openai' | 'anthropic' | 'a2a' | 'console' | 'admin' | 'ui';

export type RunOutcome =
  | { status: Extract<RunOutcomeStatus, 'completed'>; detail: string; finishReason: string }
  | { status: Extract<RunOutcomeStatus, 'error'>; code: string; message: string }
  | { status: Extract<RunOutcomeStatus, 'cancelled'>; reason: string };

/** A run's events: iterated, or handed to one callback as they come (single consumer either way). */
export interface RunEvents extends AsyncIterable<RunEventWithMeta> {
  /**
   * Calls `each` synchronously with every event, the buffered ones first, so a reader of the whole run pays no
   * promise per event. `done` settles after the terminal event or once `stop()` detached the reader.
   */
  forEach(each: (event: RunEventWithMeta) => void): { done: Promise<void>; stop: () => void };
}
