// What both HTTP adapters share for embedding runs (RunRequest.kind = RUN_KIND_EMBEDDING): the input check, the
// check of the backend's vectors, and their split into `embeddings` parts small enough for one frame each (a run
// of 2048 inputs × 4096 dimensions would not fit in one 15.75 MiB frame).
import type { EmbeddingInput, RunEventPart, RunRequest } from '@iop/wire';

import { UpstreamError } from './upstream-error.js';

/** At most this many float32 values per `embeddings` part: 4 MiB of packed floats, far below a frame. */
export const MAX_VALUES_PER_BATCH = 1 << 20;
/** At most this many inputs per run (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

/** The run's embedding input; throws `invalid_request` (nothing sent) when it has none. */
export function embeddingInput(request: RunRequest): EmbeddingInput {
  const input = request.embedding;
  if (request.target === '') throw invalid('run has no target model');
  if (!input || input.inputs.length === 0) throw invalid('an embedding run needs at least one input');
  if (input.inputs.length > MAX_EMBEDDING_INPUTS)
    throw invalid(`an embedding run takes at most ${MAX_EMBEDDING_INPUTS} inputs`);
  return input;
}

/** Checks that `vectors` is one finite number list per input; throws `upstream_error` otherwise. */
export function checkVectors(vectors: unknown, expected: number, backend: string): number[][] {
  if (!Array.isArray(vectors) || vectors.length !== expected) {
    throw malformed(
      `${backend} answered ${Array.isArray(vectors) ? vectors.length : 'no'} vectors for ${expected} inputs`,
    );
  }
  for (const vector of vectors) {
    if (
      !Array.isArray(vector) ||
      !vector.every((value) => typeof value === 'number' && Number.isFinite(value))
    )
      throw malformed(`${backend} answered a vector that is not a list of numbers`);
    if (vector.length > MAX_VALUES_PER_BATCH)
      throw malformed(
        `${backend} answered a vector of ${vector.length} values (at most ${MAX_VALUES_PER_BATCH})`,
      );
  }
  return vectors as number[][];
}

/** The vectors as `embeddings` parts, in input order, each under MAX_VALUES_PER_BATCH values. */
export function* embeddingBatches(vectors: readonly number[][]): Generator<RunEventPart> {
  let items: { index: number; values: number[] }[] = [];
  let values = 0;
  for (const [index, vector] of vectors.entries()) {
    if (items.length > 0 && values + vector.length > MAX_VALUES_PER_BATCH) {
      yield { type: 'embeddings', items };
      items = [];
      values = 0;
    }
    items.push({ index, values: vector });
    values += vector.length;
  }
  if (items.length > 0) yield { type: 'embeddings', items };
}

function invalid(message: string): UpstreamError {
  return new UpstreamError('invalid_request', message, { retryable: false });
}

function malformed(message: string): UpstreamError {
  return new UpstreamError('upstream_error', message, { retryable: false });
}
