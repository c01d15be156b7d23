import { describe, expect, it } from '@jest/globals';
import { RunKind, type RunEventPart } from '@iop/wire';
import { SurfaceError } from '../surface-kit/surface-error.js';
import {
  collectEmbeddings,
  embeddingsBody,
  embeddingsRun,
  float32Base64,
  validateEmbeddingsRequest,
} from './embeddings.js';

async function* replay(parts: RunEventPart[]): AsyncIterable<RunEventPart> {
  for (const part of parts) yield await Promise.resolve(part);
}

const complete: RunEventPart = { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 };

function status(run: () => unknown): number | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof SurfaceError) return error.status;
    throw error;
  }
  return undefined;
}

describe('embeddings', () => {
  it("builds an embedding run with the inputs and no messages, over the starter's session and deadline", () => {
    const base = { session: { kind: 'slot', baseId: 'openai' }, timeoutMs: 5_000 } as const;
    const { spec, caller } = embeddingsRun(
      validateEmbeddingsRequest({ model: 'm', input: 'one', dimensions: 3 }),
      base,
    );
    expect(spec.session).toBe(base.session);
    expect(spec.timeoutMs).toBe(5_000);
    expect(caller).toEqual({ includeReasoning: false });
    expect(spec.kind).toBe(RunKind.RUN_KIND_EMBEDDING);
    expect(spec.embedding).toEqual({ inputs: ['one'], dimensions: 3 });
    expect(spec.messages).toEqual([]);
  });

  it('refuses token arrays, empty input lists and a bad encoding_format with 400', () => {
    expect(status(() => validateEmbeddingsRequest({ model: 'm', input: [1, 2, 3] }))).toBe(400);
    expect(status(() => validateEmbeddingsRequest({ model: 'm', input: [[1], [2]] }))).toBe(400);
    expect(status(() => validateEmbeddingsRequest({ model: 'm', input: [] }))).toBe(400);
    expect(status(() => validateEmbeddingsRequest({ model: 'm', input: 'x', encoding_format: 'int8' }))).toBe(
      400,
    );
    expect(status(() => validateEmbeddingsRequest({ model: 'm', input: Array(2049).fill('x') }))).toBe(400);
  });

  it('puts vectors from several batches back in input order, with usage', async () => {
    const collected = await collectEmbeddings(
      replay([
        { type: 'start', sessionId: 's', adapter: 'a', target: 't' },
        { type: 'embeddings', items: [{ index: 1, values: [3, 4] }] },
        { type: 'embeddings', items: [{ index: 0, values: [1, 2] }] },
        {
          type: 'usage',
          usage: {
            promptTokens: 5,
            completionTokens: 0,
            totalTokens: 5,
            reasoningTokens: 0,
            cachedTokens: 0,
            costUsd: 0,
          },
        },
        complete,
      ]),
      2,
    );
    expect(collected.vectors).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(embeddingsBody('m', collected, 'float')).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [1, 2] },
        { object: 'embedding', index: 1, embedding: [3, 4] },
      ],
      model: 'm',
      usage: { prompt_tokens: 5, total_tokens: 5 },
    });
  });

  it('fails when a vector is missing, duplicated, or the run failed', async () => {
    await expect(
      collectEmbeddings(replay([{ type: 'embeddings', items: [{ index: 0, values: [1] }] }, complete]), 2),
    ).rejects.toThrow(/no vector for input 1/);
    await expect(
      collectEmbeddings(
        replay([
          { type: 'embeddings', items: [{ index: 0, values: [1] }] },
          { type: 'embeddings', items: [{ index: 0, values: [2] }] },
          complete,
        ]),
        1,
      ),
    ).rejects.toThrow(/unexpected vector/);
    await expect(
      collectEmbeddings(
        replay([
          { type: 'error', code: 'upstream_http_404', message: 'no model', retryable: false, backendMs: 1 },
        ]),
        1,
      ),
    ).rejects.toMatchObject({ status: 502, code: 'upstream_http_404' });
  });

  it('encodes base64 as little-endian float32, as the openai SDK decodes it', () => {
    const vector = [0.5, -1.25, 3];
    const decoded = new Float32Array(Uint8Array.from(Buffer.from(float32Base64(vector), 'base64')).buffer);
    expect([...decoded]).toEqual(vector);
    expect(float32Base64([1])).toBe(Buffer.from([0, 0, 0x80, 0x3f]).toString('base64'));
  });
});
