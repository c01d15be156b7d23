import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';

import {
  DEFAULT_IMAGE_MAX_TOTAL_BYTES,
  ImageFetchError,
  type ImageByteBudget,
  type ImageFetcher,
} from '../http/image-fetch.js';
import { UpstreamError } from '../http/upstream-error.js';
import { userRun } from '../http/test-support/http-adapter-fixtures.js';
import { fetchImageUrls, toOllamaChatRequest } from './ollama-request.js';

const neverAborted = new AbortController().signal;

describe('fetchImageUrls', () => {
  const withUrls = (fetch: boolean) =>
    userRun('llava', '', {
      fetchImageUrls: fetch,
      messages: [
        create.chatMessage({ role: 'system', content: 'be brief' }),
        create.chatMessage({
          role: 'user',
          content: 'compare',
          images: ['aW5saW5l'],
          imageUrls: ['https://a.example/1.png', 'https://a.example/2.png'],
        }),
      ],
    });

  it('fetches each URL and appends its base64 to the inline images of its message', async () => {
    const asked: string[] = [];
    const fetcher: ImageFetcher = (url) => {
      asked.push(url);
      return Promise.resolve({
        base64: Buffer.from(url).toString('base64'),
        contentType: 'image/png',
        bytes: 1,
      });
    };
    const ready = await fetchImageUrls(withUrls(true), fetcher, neverAborted);
    expect(asked).toEqual(['https://a.example/1.png', 'https://a.example/2.png']);
    const body = toOllamaChatRequest(ready, { contextSize: 0 });
    expect(body.messages[1]).toEqual({
      role: 'user',
      content: 'compare',
      images: [
        'aW5saW5l',
        Buffer.from('https://a.example/1.png').toString('base64'),
        Buffer.from('https://a.example/2.png').toString('base64'),
      ],
    });
  });

  it('refuses image URLs when the run does not allow fetching, and before fetching', async () => {
    let called = false;
    const fetcher: ImageFetcher = () => {
      called = true;
      return Promise.reject(new Error('unreachable'));
    };
    const error = await fetchImageUrls(withUrls(false), fetcher, neverAborted).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).code).toBe('invalid_request');
    expect((error as UpstreamError).message).toContain('fetch_image_urls');
    expect(called).toBe(false);
    // Never sent as URLs either.
    expect(() => toOllamaChatRequest(withUrls(true), { contextSize: 0 })).toThrow(/image URLs/);
  });

  it('turns a failed fetch into image_fetch_failed naming the cause', async () => {
    const fetcher: ImageFetcher = () =>
      Promise.reject(new ImageFetchError('blocked_address', 'the image host resolves to 10.0.0.1'));
    const error = await fetchImageUrls(withUrls(true), fetcher, neverAborted).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).code).toBe('image_fetch_failed');
    expect((error as UpstreamError).retryable).toBe(false);
    expect((error as UpstreamError).message).toContain('blocked_address');
  });

  it("hands every fetch of a run one byte budget: the run's image_fetch_max_total_bytes, else the default", async () => {
    const budgets: ImageByteBudget[] = [];
    const fetcher: ImageFetcher = (_url, _signal, budget) => {
      if (budget) budgets.push(budget);
      return Promise.resolve({ base64: 'eA==', contentType: 'image/png', bytes: 1 });
    };
    await fetchImageUrls(withUrls(true), fetcher, neverAborted);
    expect(budgets.map((budget) => budget.limit)).toEqual([
      DEFAULT_IMAGE_MAX_TOTAL_BYTES,
      DEFAULT_IMAGE_MAX_TOTAL_BYTES,
    ]);
    expect(budgets[0]).toBe(budgets[1]);
    budgets.length = 0;
    await fetchImageUrls({ ...withUrls(true), imageFetchMaxTotalBytes: 1000 }, fetcher, neverAborted);
    expect(budgets.map((budget) => budget.limit)).toEqual([1000, 1000]);
  });

  it('leaves a run without image URLs as it is', async () => {
    const run = userRun('llava', 'hi');
    expect(await fetchImageUrls(run, undefined, neverAborted)).toBe(run);
  });
});

describe('toOllamaChatRequest', () => {
  it('maps messages with images, tool calls, tool results and reasoning', () => {
    const request = userRun('llama3.2', '', {
      messages: [
        create.chatMessage({ role: 'system', content: 'be nice' }),
        create.chatMessage({ role: 'user', content: 'what is this?', images: ['iVBORw0KGgo='] }),
        create.chatMessage({
          role: 'assistant',
          content: '',
          reasoning: 'need weather',
          toolCalls: [
            create.toolCall({ id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Paris"}' }),
          ],
        }),
        create.chatMessage({ role: 'tool', content: '{"temp":20}', toolCallId: 'call_1' }),
      ],
    });
    expect(toOllamaChatRequest(request, { contextSize: 0 }).messages).toEqual([
      { role: 'system', content: 'be nice' },
      { role: 'user', content: 'what is this?', images: ['iVBORw0KGgo='] },
      {
        role: 'assistant',
        content: '',
        thinking: 'need weather',
        tool_calls: [{ id: 'call_1', function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
      },
      { role: 'tool', content: '{"temp":20}', tool_name: 'get_weather', tool_call_id: 'call_1' },
    ]);
  });

  it('maps generation params (top_k included) to options, context_size to num_ctx and think', () => {
    const body = toOllamaChatRequest(
      userRun('qwen3:8b', 'x', {
        params: create.generationParams({
          maxTokens: 64,
          temperature: 0.2,
          topP: 0.9,
          topK: 40,
          stop: ['END'],
          think: true,
        }),
      }),
      { contextSize: 262144 },
    );
    expect(body).toMatchObject({
      model: 'qwen3:8b',
      stream: true,
      options: {
        num_predict: 64,
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        stop: ['END'],
        num_ctx: 262144,
      },
      think: true,
    });
  });

  it('leaves options and think out when nothing is set, and maps reasoning_effort levels to think', () => {
    const plain = toOllamaChatRequest(userRun('m', 'x'), { contextSize: 0 });
    expect(plain.options).toBeUndefined();
    expect(plain.think).toBeUndefined();
    const effort = toOllamaChatRequest(
      userRun('gpt-oss:20b', 'x', { params: create.generationParams({ reasoningEffort: 'high' }) }),
      { contextSize: 0 },
    );
    expect(effort.think).toBe('high');
    const off = toOllamaChatRequest(
      userRun('m', 'x', { params: create.generationParams({ think: false }) }),
      {
        contextSize: 0,
      },
    );
    expect(off.think).toBe(false);
  });

  it('maps tools with parsed JSON schemas and drops them for tool_choice "none"', () => {
    const tools = [
      {
        name: 'f',
        description: 'does f',
        parametersJson: '{"type":"object","properties":{"a":{"type":"string"}}}',
      },
    ];
    const body = toOllamaChatRequest(userRun('m', 'x', { tools }), { contextSize: 0 });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'f',
          description: 'does f',
          parameters: { type: 'object', properties: { a: { type: 'string' } } },
        },
      },
    ]);
    expect(
      toOllamaChatRequest(userRun('m', 'x', { tools, toolChoiceJson: '"none"' }), { contextSize: 0 }).tools,
    ).toBeUndefined();
  });

  it('rejects invalid tool JSON and a missing target with invalid_request', () => {
    const badTool = () =>
      toOllamaChatRequest(
        userRun('m', 'x', { tools: [{ name: 'f', description: '', parametersJson: '{oops' }] }),
        {
          contextSize: 0,
        },
      );
    expect(badTool).toThrow(UpstreamError);
    expect(badTool).toThrow('parameters of tool f is not valid JSON');
    expect(() => toOllamaChatRequest(userRun('', 'x'), { contextSize: 0 })).toThrow(
      'run has no target model',
    );
  });

  it('maps seed and penalties to options, and response_format to format (json or the schema)', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const body = toOllamaChatRequest(
      userRun('llama3.2', 'x', {
        params: create.generationParams({
          seed: 42,
          presencePenalty: 0.5,
          frequencyPenalty: -0.5,
          responseFormatJson: JSON.stringify({ type: 'json_schema', json_schema: { name: 'r', schema } }),
        }),
      }),
      { contextSize: 0 },
    );
    expect(body.options).toEqual({ seed: 42, presence_penalty: 0.5, frequency_penalty: -0.5 });
    expect(body.format).toEqual(schema);
    const json = toOllamaChatRequest(
      userRun('llama3.2', 'x', {
        params: create.generationParams({ responseFormatJson: '{"type":"json_object"}' }),
      }),
      { contextSize: 0 },
    );
    expect(json.format).toBe('json');
    expect(
      toOllamaChatRequest(
        userRun('llama3.2', 'x', {
          params: create.generationParams({ responseFormatJson: '{"type":"text"}' }),
        }),
        { contextSize: 0 },
      ),
    ).not.toHaveProperty('format');
  });

  it('turns thinking off for reasoning effort none', () => {
    const body = toOllamaChatRequest(
      userRun('qwen3', 'x', { params: create.generationParams({ reasoningEffort: 'none' }) }),
      { contextSize: 0 },
    );
    expect(body.think).toBe(false);
  });

  it('refuses a json_schema format without a schema, and a run carrying forwarded fields', () => {
    const noSchema = userRun('llama3.2', 'x', {
      params: create.generationParams({
        responseFormatJson: '{"type":"json_schema","json_schema":{"name":"r"}}',
      }),
    });
    expect(() => toOllamaChatRequest(noSchema, { contextSize: 0 })).toThrow(UpstreamError);
    const forwarded = userRun('llama3.2', 'x', { extraBodyJson: '{"top_k":5}' });
    expect(() => toOllamaChatRequest(forwarded, { contextSize: 0 })).toThrow(/extra_body_json/);
  });
});
