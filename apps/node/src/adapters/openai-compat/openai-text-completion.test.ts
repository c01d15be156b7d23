import { describe, expect, it } from '@jest/globals';
import { RunKind, create, type RunEventPart } from '@iop/wire';

import { userRun } from '../http/test-support/http-adapter-fixtures.js';
import type { SseEvent } from '../http/sse-reader.js';
import { UpstreamError } from '../http/upstream-error.js';
import { openAIChatParts, openAICompletionParts } from './openai-stream.js';
import {
  asChatChunkBatches,
  asChatCompletionBody,
  toOpenAITextCompletionRequest,
} from './openai-text-completion.js';

const completionRun = (fields: Parameters<typeof userRun>[2] = {}) =>
  userRun('Qwen/Qwen3-8B', '', {
    kind: RunKind.RUN_KIND_COMPLETION,
    messages: [],
    completion: { prompt: 'def add(', suffix: '' },
    ...fields,
  });

async function drain(
  stream: AsyncGenerator<RunEventPart, string, undefined> | Generator<RunEventPart, string, undefined>,
): Promise<{ parts: RunEventPart[]; finish: string }> {
  const parts: RunEventPart[] = [];
  let result = await stream.next();
  while (!result.done) {
    parts.push(result.value);
    result = await stream.next();
  }
  return { parts, finish: result.value };
}

const sse = (data: unknown): SseEvent => ({
  event: 'message',
  data: typeof data === 'string' ? data : JSON.stringify(data),
});

async function* batches(events: SseEvent[][]): AsyncIterable<readonly SseEvent[]> {
  for (const batch of events) yield await Promise.resolve(batch);
}

describe('toOpenAITextCompletionRequest', () => {
  it('sends the prompt, suffix and params as OpenAI names them, streamed with usage, forwarded fields merged', () => {
    const body = toOpenAITextCompletionRequest(
      completionRun({
        completion: { prompt: 'def add(', suffix: 'return a + b' },
        params: create.generationParams({
          maxTokens: 8,
          temperature: 0.3,
          topP: 0.8,
          stop: ['\n\n'],
          seed: 5,
          presencePenalty: 0.1,
          frequencyPenalty: 0.2,
        }),
        extraBodyJson: '{"echo":true,"top_k":4,"max_tokens":999}',
      }),
    );
    expect(body).toEqual({
      model: 'Qwen/Qwen3-8B',
      prompt: 'def add(',
      suffix: 'return a + b',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 8,
      temperature: 0.3,
      top_p: 0.8,
      stop: ['\n\n'],
      seed: 5,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      echo: true,
      top_k: 4,
    });
  });

  it('asks for one body for a collected run and refuses a run without its prompt', () => {
    expect(toOpenAITextCompletionRequest(completionRun({ collect: true }))).toEqual({
      model: 'Qwen/Qwen3-8B',
      prompt: 'def add(',
      stream: false,
    });
    expect(() => toOpenAITextCompletionRequest(completionRun({ completion: undefined }))).toThrow(
      UpstreamError,
    );
  });
});

describe('text_completion answers read by the chat parsers', () => {
  it('reads SSE text_completion chunks: text, finish reason, usage; stops at [DONE]', async () => {
    const chunk = (text: string, finish: string | null = null) =>
      sse({ id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text, finish_reason: finish }] });
    const { parts, finish } = await drain(
      openAIChatParts(
        asChatChunkBatches(
          batches([
            [chunk('return'), chunk(' a')],
            [chunk(' + b', 'length')],
            [
              sse({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } }),
              sse('[DONE]'),
            ],
          ]),
        ),
        'run-1',
      ),
    );
    expect(finish).toBe('length');
    expect(parts.filter((part) => part.type === 'text-delta').map((part) => part.text)).toEqual([
      'return a',
      ' + b',
    ]);
    expect(parts[parts.length - 1]).toEqual({
      type: 'usage',
      usage: create.usage({ promptTokens: 3, completionTokens: 3, totalTokens: 6 }),
    });
  });

  it('keeps a mid-stream error and invalid data failing as for chat', async () => {
    await expect(
      drain(openAIChatParts(asChatChunkBatches(batches([[sse({ error: { message: 'boom' } })]])), 'r')),
    ).rejects.toThrow('boom');
    await expect(drain(openAIChatParts(asChatChunkBatches(batches([[sse('{oops')]])), 'r'))).rejects.toThrow(
      'invalid SSE data',
    );
  });

  it('reads a whole text_completion body', async () => {
    const { parts, finish } = await drain(
      openAICompletionParts(
        asChatCompletionBody({
          object: 'text_completion',
          choices: [{ index: 0, text: 'return a + b', finish_reason: 'stop', logprobs: null }],
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        }),
        'run-1',
      ),
    );
    expect(finish).toBe('stop');
    expect(parts).toEqual([
      { type: 'text-delta', text: 'return a + b' },
      { type: 'usage', usage: create.usage({ promptTokens: 3, completionTokens: 4, totalTokens: 7 }) },
    ]);
  });
});
