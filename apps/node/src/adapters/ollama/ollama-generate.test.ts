import { describe, expect, it } from '@jest/globals';
import { RunKind, create } from '@iop/wire';

import { userRun } from '../http/test-support/http-adapter-fixtures.js';
import { UpstreamError } from '../http/upstream-error.js';
import { asChatLines, toOllamaGenerateRequest } from './ollama-generate.js';
import { ollamaChatParts } from './ollama-stream.js';

const completionRun = (fields: Parameters<typeof userRun>[2] = {}) =>
  userRun('llama3.2', '', {
    kind: RunKind.RUN_KIND_COMPLETION,
    messages: [],
    completion: { prompt: 'once upon', suffix: '' },
    ...fields,
  });

async function* lines(values: unknown[]): AsyncIterable<unknown> {
  for (const value of values) yield await Promise.resolve(value);
}

describe('toOllamaGenerateRequest', () => {
  it('sends the raw prompt with raw: true and the params as options', () => {
    const body = toOllamaGenerateRequest(
      completionRun({
        params: create.generationParams({
          maxTokens: 8,
          temperature: 0.3,
          topP: 0.8,
          stop: ['END'],
          seed: 5,
          presencePenalty: 0.1,
          frequencyPenalty: 0.2,
        }),
      }),
      { contextSize: 4096 },
    );
    expect(body).toEqual({
      model: 'llama3.2',
      prompt: 'once upon',
      raw: true,
      stream: true,
      options: {
        num_predict: 8,
        temperature: 0.3,
        top_p: 0.8,
        stop: ['END'],
        seed: 5,
        presence_penalty: 0.1,
        frequency_penalty: 0.2,
        num_ctx: 4096,
      },
    });
  });

  it('asks for one body for a collected run and sends no options when none are set', () => {
    expect(toOllamaGenerateRequest(completionRun({ collect: true }), { contextSize: 0 })).toEqual({
      model: 'llama3.2',
      prompt: 'once upon',
      raw: true,
      stream: false,
    });
  });

  it('refuses a run without its prompt, with a suffix, or with fields only OpenAI-compatible servers take', () => {
    const settings = { contextSize: 0 };
    const refusals = [
      completionRun({ completion: undefined }),
      completionRun({ completion: { prompt: 'a', suffix: 'b' } }),
      completionRun({ extraBodyJson: '{"echo":true}' }),
      completionRun({ target: '' }),
    ];
    for (const run of refusals) {
      let caught: unknown;
      try {
        toOllamaGenerateRequest(run, settings);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(UpstreamError);
      expect((caught as UpstreamError).code).toBe('invalid_request');
    }
  });
});

describe('asChatLines', () => {
  it('lets the chat parser read /api/generate lines: text, usage, finish reason and failures', async () => {
    const parts = [];
    const stream = ollamaChatParts(
      asChatLines(
        lines([
          { model: 'm', response: 'once', done: false },
          { model: 'm', response: ' upon', done: false },
          {
            model: 'm',
            response: '',
            done: true,
            done_reason: 'length',
            prompt_eval_count: 2,
            eval_count: 2,
          },
        ]),
      ),
      'run-1',
    );
    let result = await stream.next();
    while (!result.done) {
      parts.push(result.value);
      result = await stream.next();
    }
    expect(result.value).toBe('length');
    expect(parts).toEqual([
      { type: 'text-delta', text: 'once' },
      { type: 'text-delta', text: ' upon' },
      { type: 'usage', usage: create.usage({ promptTokens: 2, completionTokens: 2, totalTokens: 4 }) },
    ]);

    const failing = ollamaChatParts(asChatLines(lines([{ error: 'model crashed' }])), 'run-2');
    await expect(failing.next()).rejects.toThrow('model crashed');
  });
});
