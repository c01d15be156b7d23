// Embedding runs on Ollama: one `POST /api/embed` with every input (and `dimensions` when asked), whose
// `embeddings` become the run's `embeddings` parts and `prompt_eval_count` its usage.
import { create, type RunRequest } from '@iop/wire';

import { checkVectors, embeddingBatches, embeddingInput } from '../http/embedding-batches.js';
import type { BackendStream } from '../http/upstream-run.js';
import type { UpstreamExchange } from '../http/upstream-exchange.js';
import { UpstreamError } from '../http/upstream-error.js';

export interface OllamaEmbedRequest {
  model: string;
  input: string[];
  dimensions?: number;
}

export function toOllamaEmbedRequest(request: RunRequest): OllamaEmbedRequest {
  const input = embeddingInput(request);
  if (request.extraBodyJson.trim() !== '')
    throw new UpstreamError(
      'invalid_request',
      'this run carries fields only OpenAI-compatible backends take',
      {
        retryable: false,
      },
    );
  const body: OllamaEmbedRequest = { model: request.target, input: [...input.inputs] };
  if (input.dimensions !== undefined) body.dimensions = input.dimensions;
  return body;
}

/** Sends the embed request and yields the vectors and usage; returns the finish reason `stop`. */
export async function* ollamaEmbedParts(
  exchange: UpstreamExchange,
  url: string,
  headers: Record<string, string>,
  request: RunRequest,
): BackendStream {
  const body = toOllamaEmbedRequest(request);
  const response = await exchange.send(url, { method: 'POST', headers, body });
  const answer = (await exchange.json(response)) as {
    embeddings?: unknown;
    prompt_eval_count?: unknown;
  } | null;
  const vectors = checkVectors(answer?.embeddings, body.input.length, 'Ollama');
  yield* embeddingBatches(vectors);
  const tokens = typeof answer?.prompt_eval_count === 'number' ? answer.prompt_eval_count : 0;
  yield { type: 'usage', usage: create.usage({ promptTokens: tokens, totalTokens: tokens }) };
  return 'stop';
}
