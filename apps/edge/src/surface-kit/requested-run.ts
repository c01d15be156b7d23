// RequestedRun: what a validated OpenAI-compatible (or Anthropic Messages) request asks the edge to run,
// independent of which surface and endpoint it came through, plus the conversions every surface shares (the
// affinity key, a tool definition). It carries what only the surface needs (who asked, trace context, how to present reasoning,
// dropped parameters); the run starter turns it into the service's RunSpec (placement/run-types.ts).
import type {
  ChatMessage,
  CompletionInput,
  EmbeddingInput,
  GenerationParams,
  RunKind,
  ToolDefinition,
} from '@iop/wire';
import type { Principal } from '../governance/principal.js';
import type { ParentRef } from '../service/types.js';

export interface RequestedRun {
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** JSON of a chat-completions style tool_choice. */
  toolChoiceJson?: string;
  /** undefined for runs without generation (embeddings). */
  params: GenerationParams | undefined;
  /** metadata.workspace */
  workspace?: string;
  /** The caller's metadata, minus `workspace`, recorded with the run. */
  metadata: Record<string, string>;
  /** think / reasoning_effort / include_reasoning asked for reasoning (generation policy input). */
  reasoningRequested: boolean;
  /** Reasoning deltas are returned to the caller as reasoning (reasoning_content / reasoning items). */
  includeReasoning: boolean;
  /** Who asked (the API key's principal); undefined = anonymous (no keys configured). */
  principal?: Principal;
  /** Set for an agent's model call: the agent run this request is a child run of. */
  parent?: ParentRef;
  /** The request's W3C `traceparent` header, continued by the run's spans. */
  traceparent?: string;
  /** The answer is one JSON body (a non-streaming, non-background request): see RunRequest.collect. */
  collect?: boolean;
  /** JSON object of fields forwarded verbatim to an OpenAI-compatible backend (RunRequest.extra_body_json). */
  extraBodyJson?: string;
  /** Fields the model's `drop_unsupported` removed (the `x-iop-dropped-params` header). */
  droppedParams?: string[];
  /** Non-chat runs (RunRequest.kind): text completion with `completion`, embeddings with `embedding`. */
  kind?: RunKind;
  completion?: CompletionInput;
  embedding?: EmbeddingInput;
  /** The node fetches the messages' image URLs for a backend that takes only inline images (RunRequest.fetch_image_urls). */
  fetchImageUrls?: boolean;
  /** With fetchImageUrls: the model's `image_limits.max_total_bytes` (RunRequest.image_fetch_max_total_bytes). */
  imageFetchMaxTotalBytes?: number;
  /** The conversation's affinity key: `x-session-id`, else the body's `user` (service RunSpec.affinityKey). */
  affinityKey?: string;
}

/** Longest affinity key taken from a request (a longer `x-session-id` or `user` is cut: it is hashed anyway). */
const MAX_AFFINITY_KEY_CHARS = 1024;

/**
 * The affinity key a request names: its `x-session-id` header, else `fallback` (OpenAI `user`, Anthropic
 * `metadata.user_id`); undefined when neither is a non-empty string.
 */
export function requestAffinityKey(
  sessionHeader: string | string[] | undefined,
  fallback: unknown,
): string | undefined {
  const header = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
  const key = typeof header === 'string' && header.trim() !== '' ? header.trim() : fallback;
  if (typeof key !== 'string' || key === '') return undefined;
  return key.slice(0, MAX_AFFINITY_KEY_CHARS);
}

export function toolDefinition(name: string, description: string | null | undefined, parameters: unknown) {
  return {
    name,
    description: description ?? '',
    parametersJson: parameters == null ? '' : JSON.stringify(parameters),
  };
}
