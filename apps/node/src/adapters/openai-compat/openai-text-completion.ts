// Text-completion runs on an OpenAI-compatible server (RunRequest.kind = completion): `POST /v1/completions`
// with the prompt (and suffix), the generation params as OpenAI names them, the forwarded fields
// (extra_body_json: echo, logit_bias, user, vLLM's top_k, ...) merged in last; streamed SSE with usage, or one
// JSON body for a collected run. A completion chunk's `choices[0].text` is the chat chunk's `delta.content`, so
// each chunk is read as a chat chunk by the chat stream parser (same usage, finish and failure handling).
import type { RunRequest } from '@iop/wire';

import type { SseEvent } from '../http/sse-reader.js';
import { UpstreamError } from '../http/upstream-error.js';
import { mergeExtraBody } from './openai-request.js';

type Json = Record<string, unknown>;

export function toOpenAITextCompletionRequest(request: RunRequest): Json {
  const input = request.completion;
  if (request.target === '')
    throw new UpstreamError('invalid_request', 'run has no target model', { retryable: false });
  if (!input)
    throw new UpstreamError('invalid_request', 'a completion run needs its prompt', { retryable: false });
  const body: Json = { model: request.target, prompt: input.prompt };
  if (input.suffix !== '') body.suffix = input.suffix;
  if (request.collect) body.stream = false;
  else {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  const params = request.params;
  if (params?.maxTokens !== undefined) body.max_tokens = params.maxTokens;
  if (params?.temperature !== undefined) body.temperature = params.temperature;
  if (params?.topP !== undefined) body.top_p = params.topP;
  if (params && params.stop.length > 0) body.stop = [...params.stop];
  if (params?.seed !== undefined) body.seed = params.seed;
  if (params?.presencePenalty !== undefined) body.presence_penalty = params.presencePenalty;
  if (params?.frequencyPenalty !== undefined) body.frequency_penalty = params.frequencyPenalty;
  mergeExtraBody(body, request.extraBodyJson);
  return body;
}

/** A completion choice (`text`) as a chat choice (`delta`/`message` with `content`); other keys kept. */
function asChatChoices(value: Json, key: 'delta' | 'message'): Json {
  if (!Array.isArray(value['choices'])) return value;
  const choices = (value['choices'] as unknown[]).map((raw) => {
    if (typeof raw !== 'object' || raw === null) return raw;
    const { text, ...rest } = raw as Json;
    return { ...rest, [key]: { content: text } };
  });
  return { ...value, choices };
}

/** A whole `text_completion` body in the shape of a chat completion body. */
export function asChatCompletionBody(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return asChatChoices(body as Json, 'message');
}

/** SSE batches of `text_completion` chunks as batches of chat chunks (`[DONE]` and non-JSON data kept). */
export async function* asChatChunkBatches(
  batches: AsyncIterable<readonly SseEvent[]>,
): AsyncGenerator<readonly SseEvent[], void, undefined> {
  for await (const events of batches) {
    yield events.map((event) => {
      const data = event.data.trim();
      if (data === '' || data === '[DONE]') return event;
      let chunk: unknown;
      try {
        chunk = JSON.parse(data) as unknown;
      } catch {
        // The chat parser reports invalid data.
        return event;
      }
      if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) return event;
      return { ...event, data: JSON.stringify(asChatChoices(chunk as Json, 'delta')) };
    });
  }
}
