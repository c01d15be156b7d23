// Embedding runs on an OpenAI-compatible server: one `POST /v1/embeddings` with every input, asking for float
// vectors (`encoding_format` is the edge's business: it encodes what the caller asked), `dimensions` when set,
// and the fields the edge forwards verbatim (extra_body_json). The answer's `data` (ordered by `index`) becomes
// the run's `embeddings` parts and its `usage` the run's usage.
import { create, type RunRequest } from '@iop/wire';

import { checkVectors, embeddingBatches, embeddingInput } from '../http/embedding-batches.js';
import type { BackendStream } from '../http/upstream-run.js';
import type { UpstreamExchange } from '../http/upstream-exchange.js';
import { UpstreamError } from '../http/upstream-error.js';
import { mergeExtraBody } from './openai-request.js';

export function toOpenAIEmbeddingsRequest(request: RunRequest): Record<string, unknown> {
  const input = embeddingInput(request);
  const body: Record<string, unknown> = {
    model: request.target,
    input: [...input.inputs],
    encoding_format: 'float',
  };
  if (input.dimensions !== undefined) body.dimensions = input.dimensions;
  mergeExtraBody(body, request.extraBodyJson);
  return body;
}

interface EmbeddingsAnswer {
  data?: { index?: unknown; embedding?: unknown }[];
  usage?: { prompt_tokens?: unknown; total_tokens?: unknown };
}

export async function* openAIEmbeddingsParts(
  exchange: UpstreamExchange,
  url: string,
  headers: Record<string, string>,
  request: RunRequest,
): BackendStream {
  const body = toOpenAIEmbeddingsRequest(request);
  const count = (body.input as string[]).length;
  const response = await exchange.send(url, { method: 'POST', headers, body });
  const answer = (await exchange.json(response)) as EmbeddingsAnswer | null;
  if (!answer || !Array.isArray(answer.data))
    throw new UpstreamError('upstream_error', 'the embeddings answer has no data list', { retryable: false });
  const ordered: unknown[] = new Array<unknown>(count);
  answer.data.forEach((entry, position) => {
    const index = typeof entry.index === 'number' ? entry.index : position;
    if (Number.isInteger(index) && index >= 0 && index < count) ordered[index] = entry.embedding;
  });
  const vectors = checkVectors(ordered, count, 'the OpenAI-compatible server');
  yield* embeddingBatches(vectors);
  const prompt = typeof answer.usage?.prompt_tokens === 'number' ? answer.usage.prompt_tokens : 0;
  const total = typeof answer.usage?.total_tokens === 'number' ? answer.usage.total_tokens : prompt;
  yield { type: 'usage', usage: create.usage({ promptTokens: prompt, totalTokens: total }) };
  return 'stop';
}
