// Maps a RunRequest to an OpenAI `/v1/chat/completions` body: streamed with usage, or (for a run whose caller
// collects the whole answer, `RunRequest.collect`) `stream: false`, which answers one JSON body. Standard top-level
// fields pass through as OpenAI names them: max_tokens, temperature, top_p, stop, tools, tool_choice,
// reasoning_effort, stream_options. Images become data-URL `image_url` parts; assistant tool calls and tool
// results keep their ids. For `provider: vllm`, `think` becomes chat_template_kwargs.enable_thinking (the switch
// vLLM's reasoning models read); generic servers get only standard fields. seed, presence_penalty,
// frequency_penalty and response_format pass as OpenAI names them; the fields the edge forwards verbatim
// (extra_body_json: logit_bias, user, vLLM's top_k, guided_json, ...) are merged in last, never replacing a field
// set here (an object such as chat_template_kwargs is merged key by key, the keys set here winning).
import type { ChatMessage, RunRequest } from '@iop/wire';

import { UpstreamError } from '../http/upstream-error.js';

type Json = Record<string, unknown>;

function invalid(message: string): UpstreamError {
  return new UpstreamError('invalid_request', message, { retryable: false });
}

/** MIME type of base64 image data from its first bytes (PNG, JPEG, GIF, WebP); PNG when unknown. */
export function imageMimeType(base64: string): string {
  if (base64.startsWith('/9j/')) return 'image/jpeg';
  if (base64.startsWith('R0lGOD')) return 'image/gif';
  if (base64.startsWith('UklGR')) return 'image/webp';
  return 'image/png';
}

function content(message: ChatMessage): string | Json[] | null {
  if (message.images.length === 0 && message.imageUrls.length === 0) {
    // OpenAI wants null content on an assistant turn that only calls tools.
    return message.role === 'assistant' && message.toolCalls.length > 0 && message.content === ''
      ? null
      : message.content;
  }
  const parts: Json[] = [];
  if (message.content !== '') parts.push({ type: 'text', text: message.content });
  for (const image of message.images) {
    parts.push({ type: 'image_url', image_url: { url: `data:${imageMimeType(image)};base64,${image}` } });
  }
  // Remote images go to the backend as the caller gave them: the backend fetches them.
  for (const url of message.imageUrls) parts.push({ type: 'image_url', image_url: { url } });
  return parts;
}

function toMessage(message: ChatMessage): Json {
  const out: Json = { role: message.role, content: content(message) };
  if (message.name && message.role !== 'tool') out.name = message.name;
  if (message.toolCalls.length > 0) {
    out.tool_calls = message.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.argumentsJson || '{}' },
    }));
  }
  if (message.role === 'tool') out.tool_call_id = message.toolCallId;
  return out;
}

function parseParameters(text: string, tool: string): unknown {
  if (text.trim() === '') return { type: 'object', properties: {} };
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid(`parameters of tool ${tool} are not valid JSON`);
  }
}

/** tool_choice arrives as JSON text (`"auto"`, `{"type":"function",...}`); a bare word is taken as a string. */
function toolChoice(json: string): unknown {
  const trimmed = json.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return trimmed;
  }
}

export interface OpenAIRequestSettings {
  provider: string;
}

export function toOpenAIChatRequest(request: RunRequest, settings: OpenAIRequestSettings): Json {
  if (request.target === '') throw invalid('run has no target model');
  const body: Json = {
    model: request.target,
    messages: request.messages.map(toMessage),
  };
  // A whole answer carries its usage; stream_options is only valid on a streamed request.
  if (request.collect) body.stream = false;
  else {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  const params = request.params;
  if (params?.maxTokens !== undefined) body.max_tokens = params.maxTokens;
  if (params?.temperature !== undefined) body.temperature = params.temperature;
  if (params?.topP !== undefined) body.top_p = params.topP;
  // Not in OpenAI's API; vLLM, llama.cpp, SGLang and LM Studio take it as a top-level field.
  if (params?.topK !== undefined) body.top_k = params.topK;
  if (params && params.stop.length > 0) body.stop = [...params.stop];
  if (params?.reasoningEffort) body.reasoning_effort = params.reasoningEffort;
  if (params?.think !== undefined && settings.provider === 'vllm') {
    body.chat_template_kwargs = { enable_thinking: params.think };
  }
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        parameters: parseParameters(tool.parametersJson, tool.name),
      },
    }));
  }
  const choice = toolChoice(request.toolChoiceJson);
  if (choice !== undefined) body.tool_choice = choice;
  if (params?.seed !== undefined) body.seed = params.seed;
  if (params?.presencePenalty !== undefined) body.presence_penalty = params.presencePenalty;
  if (params?.frequencyPenalty !== undefined) body.frequency_penalty = params.frequencyPenalty;
  if (params?.responseFormatJson)
    body.response_format = parseObject(params.responseFormatJson, 'response_format');
  mergeExtraBody(body, request.extraBodyJson);
  return body;
}

function parseObject(text: string, what: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw invalid(`${what} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${what} must be a JSON object`);
  return value as Json;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Adds the forwarded fields the body does not set; an object both set is merged, the body's keys winning. */
export function mergeExtraBody(body: Json, extraBodyJson: string): void {
  if (extraBodyJson.trim() === '') return;
  const extra = parseObject(extraBodyJson, 'extra_body_json');
  for (const [key, value] of Object.entries(extra)) {
    const own = body[key];
    if (own === undefined) body[key] = value;
    else if (isObject(own) && isObject(value)) body[key] = { ...value, ...own };
  }
}
