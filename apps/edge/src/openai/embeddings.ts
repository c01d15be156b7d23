// POST /v1/embeddings: the body's check, its run (RunRequest.kind = embedding: the inputs travel in
// `embedding`, no messages), the run's `embeddings` parts read back in input order, and the OpenAI answer with
// each vector as a JSON float list or, for `encoding_format: "base64"` (what the official SDK asks for unless told
// otherwise), base64 of its little-endian float32 bytes. Token-array inputs are refused: Ollama cannot take them
// and IOP has no tokenizer to turn them back into text.
import { RunKind, type Embedding, type RunEventPart, type Usage } from '@iop/wire';
import { runFailed } from '../surface-kit/surface-error.js';
import { invalidRequest } from './openai-error.js';
import { checkBody, compileBodySchema } from './request-validator.js';
import type { RunBase, SurfaceRun } from '../surface-kit/surface-run.js';

/** OpenAI's own limit on inputs per request. */
export const MAX_EMBEDDING_INPUTS = 2048;

export interface EmbeddingsRequestBody {
  model: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64' | null;
  dimensions?: number | null;
  user?: string | null;
}

const schema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: MAX_EMBEDDING_INPUTS, items: { type: 'string' } },
      ],
    },
    encoding_format: { anyOf: [{ type: 'string', enum: ['float', 'base64'] }, { type: 'null' }] },
    dimensions: { type: ['integer', 'null'], minimum: 1, maximum: 65536 },
    user: { type: ['string', 'null'] },
  },
} as const;

const validateBody = compileBodySchema<EmbeddingsRequestBody>(schema);

export function validateEmbeddingsRequest(body: unknown): EmbeddingsRequestBody {
  return checkBody(body, validateBody, refuseTokenInputs);
}

function refuseTokenInputs(body: Record<string, unknown>): void {
  const input = body['input'];
  const tokens =
    Array.isArray(input) &&
    input.length > 0 &&
    input.every((entry) => typeof entry === 'number' || Array.isArray(entry));
  if (tokens) {
    throw invalidRequest(
      "Token arrays in 'input' are not supported: send the text (IOP has no tokenizer and Ollama takes text only)",
      'input',
      'unsupported_parameter',
    );
  }
}

/** The run of an embeddings request: no messages, the inputs in `embedding`. */
export function embeddingsRun(body: EmbeddingsRequestBody, base: RunBase): SurfaceRun {
  const inputs = typeof body.input === 'string' ? [body.input] : body.input;
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages: [],
      tools: [],
      params: undefined,
      kind: RunKind.RUN_KIND_EMBEDDING,
      embedding: { inputs, dimensions: body.dimensions ?? undefined },
      metadata: {},
      reasoningRequested: false,
      collect: true,
    },
    caller: { includeReasoning: false },
  };
}

export interface CollectedEmbeddings {
  /** One vector per input, in input order. */
  vectors: number[][];
  usage: Usage | undefined;
}

/** Reads an embedding run to its end; throws the run's failure (as the chat collector does). */
export async function collectEmbeddings(
  parts: AsyncIterable<RunEventPart>,
  count: number,
): Promise<CollectedEmbeddings> {
  const vectors: (number[] | undefined)[] = new Array<number[] | undefined>(count);
  let usage: Usage | undefined;
  for await (const part of parts) {
    switch (part.type) {
      case 'embeddings':
        for (const item of part.items) place(vectors, item);
        break;
      case 'usage':
        usage = part.usage;
        break;
      case 'complete': {
        const missing = vectors.findIndex((vector) => vector === undefined);
        if (missing >= 0) {
          throw runFailed('upstream_error', `The backend returned no vector for input ${missing}`);
        }
        return { vectors: vectors as number[][], usage };
      }
      case 'error':
        throw runFailed(part.code, part.message);
      case 'cancelled':
        throw runFailed('run_cancelled', `The run was cancelled: ${part.reason}`);
      // Text parts are not part of an embedding answer.
      case 'start':
      case 'progress':
      case 'text-delta':
      case 'reasoning-delta':
      case 'tool-call':
        break;
      default: {
        const unreachable: never = part;
        throw new Error(`unknown run part ${JSON.stringify(unreachable)}`);
      }
    }
  }
  throw runFailed('run_incomplete', 'The run ended without a result');
}

function place(vectors: (number[] | undefined)[], item: Embedding): void {
  if (item.index >= vectors.length || vectors[item.index] !== undefined) {
    throw runFailed('upstream_error', `The backend returned an unexpected vector (index ${item.index})`);
  }
  vectors[item.index] = item.values;
}

/** The OpenAI embeddings answer. */
export function embeddingsBody(
  model: string,
  collected: CollectedEmbeddings,
  encoding: 'float' | 'base64',
): Record<string, unknown> {
  const promptTokens = collected.usage?.promptTokens ?? 0;
  return {
    object: 'list',
    data: collected.vectors.map((vector, index) => ({
      object: 'embedding',
      index,
      embedding: encoding === 'base64' ? float32Base64(vector) : vector,
    })),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: collected.usage?.totalTokens || promptTokens },
  };
}

/** Base64 of the vector as little-endian float32 values (how OpenAI encodes `encoding_format: base64`). */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}
