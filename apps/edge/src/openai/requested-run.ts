// RequestedRun: what a validated OpenAI-compatible (or Anthropic Messages) request asks the edge to run,
// independent of which endpoint it came through, plus the conversions the endpoints share (generation fields,
// metadata, images). It carries what only the surface needs (who asked, trace context, how to present reasoning,
// dropped parameters); the run starter turns it into the service's RunSpec (placement/run-types.ts).
import {
  create,
  type ChatMessage,
  type CompletionInput,
  type EmbeddingInput,
  type GenerationParams,
  type RunKind,
  type ToolDefinition,
} from '@iop/wire';
import type { AdapterType } from '@iop/config';
import type { Principal } from '../governance/principal.js';
import type { ParentRef } from '../service/types.js';
import { invalidRequest } from './openai-error.js';
import type { GenerationFieldsBody, ResponseFormatBody } from './request-schemas.js';

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

export function generationParams(
  body: GenerationFieldsBody,
  maxTokens: number | null | undefined,
  stop: string | string[] | null | undefined,
  reasoningEffortOverride?: string | null,
  responseFormat?: ResponseFormatBody | null,
): { params: GenerationParams; reasoningRequested: boolean; includeReasoning: boolean } {
  const think = body.think;
  let reasoningEffort = reasoningEffortOverride ?? body.reasoning_effort ?? '';
  // Ollama-style `think: "high"` names an effort level.
  if (typeof think === 'string' && think !== '' && !reasoningEffort) reasoningEffort = think;
  const thinkFlag =
    typeof think === 'boolean' ? think : typeof think === 'string' && think !== '' ? true : undefined;
  const includeReasoning = body.include_reasoning === true;
  const params = create.generationParams({
    maxTokens: maxTokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop: stop == null ? [] : typeof stop === 'string' ? [stop] : stop,
    reasoningEffort,
    thinkingBudget: body.thinking_token_budget ?? undefined,
    includeReasoning,
    think: thinkFlag,
    seed: body.seed ?? undefined,
    presencePenalty: body.presence_penalty ?? undefined,
    frequencyPenalty: body.frequency_penalty ?? undefined,
    // A text format asks for nothing: no format reaches the backend.
    responseFormatJson:
      responseFormat == null || responseFormat.type === 'text' ? '' : JSON.stringify(responseFormat),
  });
  const reasoningRequested =
    thinkFlag === true || (reasoningEffort !== '' && reasoningEffort !== 'none') || includeReasoning;
  return { params, reasoningRequested, includeReasoning };
}

export function splitMetadata(metadata: Record<string, string> | null | undefined): {
  workspace?: string;
  metadata: Record<string, string>;
} {
  if (!metadata) return { metadata: {} };
  const { workspace, ...rest } = metadata;
  return { workspace: workspace === '' ? undefined : workspace, metadata: rest };
}

/**
 * An image part's URL: a `data:` URL's base64 payload (inline), or an http(s) URL kept as given (remote; which
 * backends take it is decided per model by `checkImageUrls`). Other schemes are refused.
 */
export function imageInput(url: string, param: string): { base64: string } | { url: string } {
  const match = /^data:[^;,]+;base64,(.*)$/s.exec(url);
  if (match) return { base64: match[1] ?? '' };
  if (/^https?:\/\/[^\s]+$/i.test(url) && URL.canParse(url)) return { url };
  throw invalidRequest(
    `Unsupported image URL at '${param}': only base64 data: URLs and http(s) URLs are accepted`,
    param,
    'unsupported_image_url',
  );
}

/** Whether any message of the requested run carries a remote image URL. */
export function hasImageUrls(spec: Pick<RequestedRun, 'messages'>): boolean {
  return spec.messages.some((message) => message.imageUrls.length > 0);
}

/**
 * Remote image URLs a request may carry (all messages together; the model's `image_limits.max_urls`): each may
 * make a node fetch an image, so more are refused with 400 `too_many_image_urls` before any run is placed.
 */
export function checkImageUrlCount(
  model: string,
  spec: { readonly messages: readonly { readonly imageUrls: readonly string[] }[] },
  maxUrls: number,
): void {
  let count = 0;
  for (const message of spec.messages) count += message.imageUrls.length;
  if (count > maxUrls)
    throw invalidRequest(
      `The request carries ${count} image URLs; model '${model}' takes at most ${maxUrls} per request ` +
        '(image_limits.max_urls)',
      'messages',
      'too_many_image_urls',
    );
}

/**
 * Remote images per backend: OpenAI-compatible backends receive the URL as is; Ollama takes only inline images,
 * so the model must set `fetch_image_urls` (the node then fetches them); a CLI agent never takes them. Returns
 * whether the run asks the node to fetch; throws 400 `unsupported_image_url` naming the model and backend.
 */
export function checkImageUrls(
  model: string,
  backends: readonly AdapterType[],
  fetchEnabled: boolean,
): boolean {
  // No known backend (as for the field rules): every adapter type may serve it.
  const types: readonly AdapterType[] = backends.length > 0 ? backends : ['openai_compat', 'ollama', 'cli'];
  for (const backend of types) {
    if (backend === 'cli')
      throw invalidRequest(
        `Model '${model}' is served by a CLI agent backend, which takes no image URLs: send the image inline as a base64 data: URL`,
        'messages',
        'unsupported_image_url',
      );
    if (backend === 'ollama' && !fetchEnabled)
      throw invalidRequest(
        `Model '${model}' is served by an Ollama backend, which takes no image URLs: send the image inline as a ` +
          "base64 data: URL, or set 'fetch_image_urls: true' on the model to have the node fetch it",
        'messages',
        'unsupported_image_url',
      );
  }
  return fetchEnabled && types.includes('ollama');
}

export function toolDefinition(name: string, description: string | null | undefined, parameters: unknown) {
  return {
    name,
    description: description ?? '',
    parametersJson: parameters == null ? '' : JSON.stringify(parameters),
  };
}
