import { describe, expect, it } from '@jest/globals';
import { RunKind, create, type RunEventPart } from '@iop/wire';
import { refusal } from './test-support/refusal.js';
import type { RunBase } from '../surface-kit/surface-run.js';
import { completionBody, completionsRun, validateCompletionsRequest } from './completions.js';
import { planRequestFields } from './request-fields.js';
import { collectRun } from '../surface-kit/run-output.js';

async function* replay(parts: RunEventPart[]): AsyncIterable<RunEventPart> {
  for (const part of parts) yield await Promise.resolve(part);
}

/** What the run starter puts in every spec (surface-run.ts RunBase). */
const BASE: RunBase = { session: { kind: 'slot', baseId: 'openai' }, timeoutMs: undefined };

describe('validateCompletionsRequest', () => {
  it('takes a string prompt or a list of one string', () => {
    expect(validateCompletionsRequest({ model: 'm', prompt: 'hi' }).prompt).toBe('hi');
    expect(
      completionsRun(validateCompletionsRequest({ model: 'm', prompt: ['hi'] }), BASE).spec.completion,
    ).toEqual({
      prompt: 'hi',
      suffix: '',
    });
  });

  it('refuses token ids and several prompts with 400 naming prompt', () => {
    for (const prompt of [[1, 2, 3], [[1, 2]], ['a', 'b']]) {
      const error = refusal(() => validateCompletionsRequest({ model: 'm', prompt }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('prompt');
      expect(error.code).toBe('unsupported_parameter');
    }
  });

  it('refuses a missing prompt, an empty list and out-of-range sampling values', () => {
    expect(refusal(() => validateCompletionsRequest({ model: 'm' })).param).toBe('prompt');
    expect(refusal(() => validateCompletionsRequest({ model: 'm', prompt: [] })).param).toBe('prompt');
    expect(refusal(() => validateCompletionsRequest({ model: 'm', prompt: 'a', temperature: 3 })).param).toBe(
      'temperature',
    );
    expect(refusal(() => validateCompletionsRequest({ model: 'm', prompt: 'a', max_tokens: 0 })).param).toBe(
      'max_tokens',
    );
    expect(refusal(() => validateCompletionsRequest([])).status).toBe(400);
  });
});

describe('completionsRun', () => {
  it('carries the prompt and suffix in completion and the sampling fields in the params, no messages', () => {
    const spec = completionsRun(
      validateCompletionsRequest({
        model: 'm',
        prompt: 'def add(',
        suffix: 'return a + b',
        max_tokens: 16,
        temperature: 0.1,
        top_p: 0.5,
        stop: '\n\n',
        seed: 3,
        presence_penalty: 0.2,
        frequency_penalty: 0.4,
      }),
      BASE,
    ).spec;
    expect(spec.kind).toBe(RunKind.RUN_KIND_COMPLETION);
    expect(spec.messages).toEqual([]);
    expect(spec.completion).toEqual({ prompt: 'def add(', suffix: 'return a + b' });
    expect(spec.params).toMatchObject({
      maxTokens: 16,
      temperature: 0.1,
      topP: 0.5,
      stop: ['\n\n'],
      seed: 3,
      presencePenalty: 0.2,
      frequencyPenalty: 0.4,
      think: undefined,
      reasoningEffort: '',
      responseFormatJson: '',
    });
    expect(spec.reasoningRequested).toBe(false);
  });
});

describe('completionBody', () => {
  it('answers a text_completion with one choice, null logprobs and usage, leaving reasoning out', async () => {
    const run = await collectRun(
      replay([
        { type: 'reasoning-delta', text: 'hmm' },
        { type: 'text-delta', text: 'once ' },
        { type: 'text-delta', text: 'upon' },
        { type: 'usage', usage: create.usage({ promptTokens: 4, completionTokens: 2, totalTokens: 6 }) },
        { type: 'complete', detail: 'length', finishReason: 'length', backendMs: 1 },
      ]),
      { includeReasoning: false, inlineReasoning: false },
    );
    expect(completionBody({ id: 'cmpl-1', created: 7, model: 'm', includeUsage: false }, run)).toEqual({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 7,
      model: 'm',
      choices: [{ text: 'once upon', index: 0, logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
    });
  });
});

describe('completions field rules', () => {
  const plan = (body: Record<string, unknown>, backend: 'ollama' | 'openai_compat', drop = false) =>
    planRequestFields(body, {
      endpoint: 'completions',
      model: 'm',
      backends: [backend],
      dropUnsupported: drop,
    });

  it('maps the sampling fields on both backends and forwards echo, logit_bias and user to vLLM', () => {
    const sampling = { model: 'm', prompt: 'a', max_tokens: 2, temperature: 1, top_p: 1, stop: 'x', seed: 1 };
    expect(plan({ ...sampling }, 'ollama')).toEqual({ dropped: [], extraBody: undefined });
    expect(
      plan(
        { ...sampling, suffix: 'z', echo: true, logit_bias: { '1': 2 }, user: 'u', top_k: 5 },
        'openai_compat',
      ),
    ).toEqual({ dropped: [], extraBody: { echo: true, logit_bias: { '1': 2 }, user: 'u', top_k: 5 } });
  });

  it('refuses on Ollama what a raw prompt cannot take, and logprobs and n > 1 everywhere', () => {
    for (const [field, value] of [
      ['suffix', 'z'],
      ['echo', true],
      ['logit_bias', { '1': 2 }],
      ['user', 'u'],
      ['top_k', 5],
    ] as const) {
      const error = refusal(() => plan({ model: 'm', prompt: 'a', [field]: value }, 'ollama'));
      expect(error.param).toBe(field);
      expect(error.code).toBe('unsupported_parameter');
    }
    expect(refusal(() => plan({ model: 'm', prompt: 'a', logprobs: 0 }, 'openai_compat')).param).toBe(
      'logprobs',
    );
    expect(refusal(() => plan({ model: 'm', prompt: 'a', n: 2 }, 'openai_compat')).param).toBe('n');
    expect(refusal(() => plan({ model: 'm', prompt: 'a', best_of: 3 }, 'openai_compat')).param).toBe(
      'best_of',
    );
    expect(plan({ model: 'm', prompt: 'a', n: 1, echo: false, suffix: '' }, 'ollama').dropped).toEqual([]);
  });

  it('drops and names what Ollama cannot take on a drop_unsupported model', () => {
    const body: Record<string, unknown> = { model: 'm', prompt: 'a', echo: true, suffix: 'z' };
    expect(plan(body, 'ollama', true).dropped).toEqual(['echo', 'suffix']);
    expect(body).toEqual({ model: 'm', prompt: 'a' });
  });
});
