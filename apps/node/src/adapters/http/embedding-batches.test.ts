import { describe, expect, it } from '@jest/globals';
import { RunKind, type RunEventPart } from '@iop/wire';

import { userRun } from './test-support/http-adapter-fixtures.js';
import {
  checkVectors,
  embeddingBatches,
  embeddingInput,
  MAX_EMBEDDING_INPUTS,
  MAX_VALUES_PER_BATCH,
} from './embedding-batches.js';
import { UpstreamError } from './upstream-error.js';

describe('embeddingBatches', () => {
  it('keeps small answers in one part, in input order', () => {
    const parts = [
      ...embeddingBatches([
        [1, 2],
        [3, 4],
      ]),
    ];
    expect(parts).toEqual([
      {
        type: 'embeddings',
        items: [
          { index: 0, values: [1, 2] },
          { index: 1, values: [3, 4] },
        ],
      },
    ]);
  });

  it('splits so that no part carries more than MAX_VALUES_PER_BATCH values', () => {
    const size = MAX_VALUES_PER_BATCH / 4 + 1;
    const vectors = Array.from({ length: 8 }, () => new Array<number>(size).fill(0.5));
    const parts = [...embeddingBatches(vectors)] as Extract<RunEventPart, { type: 'embeddings' }>[];
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      const values = part.items.reduce((sum, item) => sum + item.values.length, 0);
      expect(values).toBeLessThanOrEqual(MAX_VALUES_PER_BATCH);
    }
    expect(parts.flatMap((part) => part.items.map((item) => item.index))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('embedding input and answer checks', () => {
  const run = (inputs: string[]) =>
    userRun('embed-model', '', { kind: RunKind.RUN_KIND_EMBEDDING, embedding: { inputs }, messages: [] });

  it('refuses a run without inputs or with too many, before sending', () => {
    expect(() => embeddingInput(run([]))).toThrow(UpstreamError);
    expect(() => embeddingInput(run(new Array<string>(MAX_EMBEDDING_INPUTS + 1).fill('x')))).toThrow(
      /at most 2048/,
    );
    expect(embeddingInput(run(['a'])).inputs).toEqual(['a']);
  });

  it('refuses answers with the wrong vector count or non-numbers', () => {
    expect(() => checkVectors([[1]], 2, 'Ollama')).toThrow(/1 vectors for 2 inputs/);
    expect(() => checkVectors([['x']], 1, 'Ollama')).toThrow(/not a list of numbers/);
    expect(() => checkVectors(undefined, 1, 'Ollama')).toThrow(/no vectors/);
    expect(checkVectors([[0.5]], 1, 'Ollama')).toEqual([[0.5]]);
  });
});
