// The OpenAI request fields every OpenAI endpoint turns into a run's RunSpec the same way: generation fields,
// metadata (with its `workspace`), and images (inline or remote, with the per-model limits and backends).
import { create, type GenerationParams } from '@iop/wire';
import type { AdapterType } from '@iop/config';
import type { RunSpec } from '../service/types.js';
import { invalidRequest } from './openai-error.js';
import type { GenerationFieldsBody, ResponseFormatBody } from './request-schemas.js';

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

/** Whether any message of the run carries a remote image URL. */
export function hasImageUrls(spec: Pick<RunSpec, 'messages'>): boolean {
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
