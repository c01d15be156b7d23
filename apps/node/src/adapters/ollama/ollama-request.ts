// Maps a RunRequest to Ollama's native `/api/chat` body. Messages keep their roles; assistant tool calls carry
// argument objects (Ollama does not take JSON text), tool results name their tool, images ride as base64, and
// the assistant's earlier reasoning goes back as `thinking`. Generation params become `options`
// (num_predict, temperature, top_p, stop, seed, presence_penalty, frequency_penalty, num_ctx), thinking becomes
// `think` (reasoning effort `none` turns it off), and an OpenAI `response_format` becomes `format`: "json" for
// json_object, the JSON schema itself for json_schema. A run carrying fields only OpenAI-compatible backends take
// (extra_body_json) is refused: the edge never sends one here, so it is a bug or a stale edge. Remote images
// (image_urls) are fetched by the node first when the run sets fetch_image_urls (fetchImageUrls), refused otherwise.
import type { ChatMessage, RunRequest, ToolCall } from '@iop/wire';

import {
  DEFAULT_IMAGE_MAX_TOTAL_BYTES,
  ImageByteBudget,
  ImageFetchError,
  type ImageFetcher,
} from '../http/image-fetch.js';
import type { AbortSignalLike } from '../cancellation.js';
import { UpstreamError } from '../http/upstream-error.js';

export interface OllamaToolCall {
  id?: string;
  function: { name: string; arguments: Record<string, unknown> };
}

export interface OllamaMessage {
  role: string;
  content: string;
  images?: string[];
  thinking?: string;
  tool_calls?: OllamaToolCall[];
  tool_name?: string;
  tool_call_id?: string;
}

export interface OllamaChatRequest {
  model: string;
  messages: OllamaMessage[];
  stream: boolean;
  tools?: { type: 'function'; function: { name: string; description: string; parameters: unknown } }[];
  options?: Record<string, unknown>;
  think?: boolean | 'low' | 'medium' | 'high';
  format?: 'json' | Record<string, unknown>;
}

export interface OllamaRequestSettings {
  /** Context window for `options.num_ctx`; 0 leaves the server's default. */
  contextSize: number;
}

/** Bad input from the caller: never retryable, reported before anything is sent. */
function invalid(message: string): UpstreamError {
  return new UpstreamError('invalid_request', message, { retryable: false });
}

function parseJsonObject(text: string, what: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw invalid(`${what} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

function toolCall(call: ToolCall): OllamaToolCall {
  return {
    ...(call.id ? { id: call.id } : {}),
    function: {
      name: call.name,
      arguments: parseJsonObject(call.argumentsJson, `arguments of tool call ${call.name}`),
    },
  };
}

/** Ollama names a tool result by its tool; the call id is passed along for servers that use it. */
function message(source: ChatMessage, toolNames: Map<string, string>): OllamaMessage {
  const out: OllamaMessage = { role: source.role, content: source.content };
  if (source.images.length > 0) out.images = [...source.images];
  if (source.reasoning) out.thinking = source.reasoning;
  if (source.toolCalls.length > 0) out.tool_calls = source.toolCalls.map(toolCall);
  if (source.role === 'tool') {
    const name = source.name || toolNames.get(source.toolCallId);
    if (name) out.tool_name = name;
    if (source.toolCallId) out.tool_call_id = source.toolCallId;
  }
  return out;
}

function think(request: RunRequest): OllamaChatRequest['think'] {
  const params = request.params;
  if (params?.think !== undefined) return params.think;
  const effort = params?.reasoningEffort;
  if (effort === 'low' || effort === 'medium' || effort === 'high') return effort;
  if (effort === 'none') return false;
  return undefined;
}

/** OpenAI response_format JSON → Ollama `format`; undefined for plain text. */
function format(json: string): OllamaChatRequest['format'] {
  if (json.trim() === '') return undefined;
  const responseFormat = parseJsonObject(json, 'response_format');
  switch (responseFormat['type']) {
    case 'text':
      return undefined;
    case 'json_object':
      return 'json';
    case 'json_schema': {
      const spec = responseFormat['json_schema'];
      const schema =
        typeof spec === 'object' && spec !== null ? (spec as Record<string, unknown>)['schema'] : undefined;
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
        throw invalid('response_format json_schema has no schema object');
      return schema as Record<string, unknown>;
    }
    default:
      throw invalid(
        `response_format type ${JSON.stringify(responseFormat['type'])} is not supported by Ollama`,
      );
  }
}

/** Tool choice "none" means no tools for Ollama (it has no tool_choice); other choices keep the tools. */
function toolChoiceIsNone(json: string): boolean {
  if (json.trim() === '') return false;
  try {
    return JSON.parse(json) === 'none';
  } catch {
    return json.trim() === 'none';
  }
}

/**
 * Ollama takes only inline images: with `fetch_image_urls` set on the run, each message's remote images are
 * fetched (one at a time, bounded by the fetcher, all of them together by the run's byte budget,
 * `image_fetch_max_total_bytes`) and appended to its base64 images; the request is returned unchanged when it has
 * none. A failed fetch is `image_fetch_failed` naming the cause (and the budget when that was passed); nothing is
 * sent then.
 */
export async function fetchImageUrls(
  request: RunRequest,
  fetchImage: ImageFetcher | undefined,
  signal: AbortSignalLike,
): Promise<RunRequest> {
  if (!request.messages.some((source) => source.imageUrls.length > 0)) return request;
  if (!request.fetchImageUrls)
    throw invalid(
      "Ollama takes no image URLs: set 'fetch_image_urls: true' on the model to have the node fetch them",
    );
  if (!fetchImage)
    throw new UpstreamError('image_fetch_failed', 'image_fetch_failed: this node has no image fetcher', {
      retryable: false,
    });
  const budget = new ImageByteBudget(request.imageFetchMaxTotalBytes || DEFAULT_IMAGE_MAX_TOTAL_BYTES);
  const messages: ChatMessage[] = [];
  for (const source of request.messages) {
    if (source.imageUrls.length === 0) {
      messages.push(source);
      continue;
    }
    const images = [...source.images];
    for (const url of source.imageUrls) {
      try {
        images.push((await fetchImage(url, signal, budget)).base64);
      } catch (error) {
        if (error instanceof ImageFetchError)
          throw new UpstreamError(
            'image_fetch_failed',
            `image_fetch_failed (${error.reason}): ${error.message}`,
            {
              retryable: false,
              cause: error,
            },
          );
        throw error;
      }
    }
    messages.push({ ...source, images, imageUrls: [] });
  }
  return { ...request, messages };
}

export function toOllamaChatRequest(request: RunRequest, settings: OllamaRequestSettings): OllamaChatRequest {
  if (request.target === '') throw invalid('run has no target model');
  if (request.messages.some((source) => source.imageUrls.length > 0))
    throw invalid('Ollama takes only inline images: the run still carries image URLs (fetch them first)');
  if (request.extraBodyJson.trim() !== '')
    throw invalid('this run carries fields only OpenAI-compatible backends take (extra_body_json)');
  const toolNames = new Map<string, string>();
  for (const source of request.messages)
    for (const call of source.toolCalls) toolNames.set(call.id, call.name);
  const body: OllamaChatRequest = {
    model: request.target,
    messages: request.messages.map((source) => message(source, toolNames)),
    // A collected run asks for the whole answer in one body.
    stream: !request.collect,
  };
  if (request.tools.length > 0 && !toolChoiceIsNone(request.toolChoiceJson)) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        description: tool.description,
        parameters: parseJsonObject(tool.parametersJson, `parameters of tool ${tool.name}`),
      },
    }));
  }
  const params = request.params;
  const options: Record<string, unknown> = {};
  if (params?.maxTokens !== undefined) options.num_predict = params.maxTokens;
  if (params?.temperature !== undefined) options.temperature = params.temperature;
  if (params?.topP !== undefined) options.top_p = params.topP;
  if (params?.topK !== undefined) options.top_k = params.topK;
  if (params && params.stop.length > 0) options.stop = [...params.stop];
  if (params?.seed !== undefined) options.seed = params.seed;
  if (params?.presencePenalty !== undefined) options.presence_penalty = params.presencePenalty;
  if (params?.frequencyPenalty !== undefined) options.frequency_penalty = params.frequencyPenalty;
  if (settings.contextSize > 0) options.num_ctx = settings.contextSize;
  if (Object.keys(options).length > 0) body.options = options;
  const thinking = think(request);
  if (thinking !== undefined) body.think = thinking;
  const output = format(params?.responseFormatJson ?? '');
  if (output !== undefined) body.format = output;
  return body;
}
