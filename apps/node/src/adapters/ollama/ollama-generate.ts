// Text-completion runs on Ollama (RunRequest.kind = completion): one `POST /api/generate` with the raw prompt
// (`raw: true`: no chat template), the generation params as `options` (as for chat), streamed NDJSON or one
// JSON body for a collected run. Each line's `response` (and `thinking`) is read by the chat stream parser, so
// usage, finish reasons and failures are read the same way. Ollama applies a suffix through the model's template,
// which a raw prompt bypasses: a run with a suffix is refused (the edge refuses it first).
import type { RunRequest } from '@iop/wire';

import { UpstreamError } from '../http/upstream-error.js';
import { toOllamaChatRequest, type OllamaRequestSettings } from './ollama-request.js';

export interface OllamaGenerateRequest {
  model: string;
  prompt: string;
  raw: true;
  stream: boolean;
  options?: Record<string, unknown>;
}

function invalid(message: string): UpstreamError {
  return new UpstreamError('invalid_request', message, { retryable: false });
}

export function toOllamaGenerateRequest(
  request: RunRequest,
  settings: OllamaRequestSettings,
): OllamaGenerateRequest {
  const input = request.completion;
  if (!input) throw invalid('a completion run needs its prompt');
  if (input.suffix !== '') throw invalid('Ollama cannot take a suffix with a raw prompt');
  // The chat mapping checks the target and extra_body_json and builds `options` from the params.
  const chat = toOllamaChatRequest({ ...request, messages: [], tools: [] }, settings);
  const body: OllamaGenerateRequest = {
    model: chat.model,
    prompt: input.prompt,
    raw: true,
    stream: chat.stream,
  };
  if (chat.options) body.options = chat.options;
  return body;
}

interface GenerateLine {
  response?: unknown;
  thinking?: unknown;
}

/** `/api/generate` lines in the shape of `/api/chat` lines (the text under `message`), other keys kept. */
export async function* asChatLines(lines: AsyncIterable<unknown>): AsyncGenerator<unknown, void, undefined> {
  for await (const value of lines) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      yield value;
      continue;
    }
    const line = value as GenerateLine;
    yield { ...value, message: { content: line.response, thinking: line.thinking } };
  }
}
