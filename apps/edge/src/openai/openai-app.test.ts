import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import { RunKind, type RunEventPart } from '@iop/wire';
import { textRun } from '../test-support/fake-edge-service.js';
import { abortWatcherCount } from '../abort-watchers.js';
import { startHarness, type Harness } from './test-support/openai-harness.js';
import { eventually, post, type HarnessOptions } from '../surface-kit/test-support/surface-harness.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';

let harness: Harness | undefined;

async function start(options: HarnessOptions = {}): Promise<Harness> {
  harness = await startHarness(options);
  return harness;
}

afterEach(async () => {
  if (!harness) return;
  const current = harness;
  harness = undefined;
  // Every test must leave the pool empty and no run alive.
  await eventually(() => {
    expect(current.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    for (const status of current.pool.snapshot()) expect([status.inFlight, status.queued]).toEqual([0, 0]);
    expect(current.service.active).toBe(0);
  });
  await current.close();
});

const user = (content: string) => [{ role: 'user' as const, content }];
const usage = {
  promptTokens: 3,
  completionTokens: 4,
  totalTokens: 7,
  reasoningTokens: 0,
  cachedTokens: 0,
  costUsd: 0,
};
const complete = (finishReason = 'stop'): RunEventPart => ({
  type: 'complete',
  detail: 'stop',
  finishReason,
  backendMs: 2,
});
const toolCallParts: RunEventPart[] = [
  { type: 'text-delta', text: '' },
  { type: 'tool-call', call: { id: 'call_1', name: 'get_weather', argumentsJson: '{"city":', index: 0 } },
  { type: 'tool-call', call: { id: 'call_1', name: '', argumentsJson: '"Paris"}', index: 0 } },
  { type: 'usage', usage },
  complete('tool_calls'),
];
const reasoningParts: RunEventPart[] = [
  { type: 'reasoning-delta', text: 'thinking' },
  { type: 'reasoning-delta', text: ' hard' },
  { type: 'text-delta', text: 'Answer' },
  complete(),
];

/** Chat request with fields outside the SDK's types. */
function chatBody(fields: Record<string, unknown>): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  return {
    model: 'pooled',
    messages: user('hi'),
    ...fields,
  };
}

describe('models', () => {
  it('lists models[], model_routes and openai.models in the OpenAI list shape', async () => {
    // openai.models are the fallback route's models: they need openai.adapter (a config check error otherwise).
    const { client } = await start({
      openai: "  adapter: 'ollama'\n  models: ['extra-model', 'org/slashed-model']",
    });
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual([
      'pooled',
      'codex',
      'llama3',
      'extra-model',
      'org/slashed-model',
    ]);
    expect((await client.models.retrieve('org/slashed-model')).id).toBe('org/slashed-model');
    expect(models.data[0]).toMatchObject({ object: 'model', owned_by: 'iop' });
    expect((await client.models.retrieve('codex')).id).toBe('codex');
    const missing = await client.models.retrieve('org/unknown').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as APIError).code).toBe('model_not_found');
  });
});

describe('chat completions', () => {
  it('answers a non-streaming request through the pool with usage and overhead header', async () => {
    const { client, service } = await start();
    const { data, response } = await client.chat.completions
      .create({ model: 'pooled', messages: user('hello'), temperature: 0.2, stop: 'END' })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.model).toBe('pooled');
    expect(data.choices[0]?.message).toMatchObject({ role: 'assistant', content: 'Hello there' });
    expect(data.choices[0]?.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    expect(Number(response.headers.get('x-iop-overhead-ms'))).toBeGreaterThanOrEqual(1.25);
    expect(response.headers.get('x-iop-provider')).toBe('prov-a');
    const input = service.submitted[0];
    expect(input).toMatchObject({
      node: 'node-1',
      adapter: 'openai_compat',
      target: 'served-a',
      providerId: 'prov-a',
      sessionId: 'openai',
      timeoutMs: 30_000,
    });
    expect(input?.params).toMatchObject({ maxTokens: 512, temperature: 0.2, stop: ['END'] });
    expect(input?.messages[0]).toMatchObject({ role: 'user', content: 'hello' });
  });

  it('answers the same through express.json (a +json content type) as through the hot path', async () => {
    const { url } = await start();
    const request = { model: 'pooled', messages: user('hello') };
    const hot = await post(url, '/v1/chat/completions', request);
    const routed = await post(url, '/v1/chat/completions', request, {
      'content-type': 'application/vnd.iop+json',
    });
    for (const response of [hot, routed]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.headers.get('x-iop-overhead-ms')).not.toBeNull();
      expect(response.headers.get('x-iop-run-id')).not.toBeNull();
      expect(response.headers.get('x-iop-queue-ms')).not.toBeNull();
      expect(response.headers.get('x-iop-provider')).toBe(hot.headers.get('x-iop-provider'));
      expect(response.headers.get('content-length')).toBe(hot.headers.get('content-length'));
      expect(response.json()['choices']).toEqual(hot.json()['choices']);
    }
    expect(hot.headers.get('x-iop-provider')).not.toBeNull();
    const hotBad = await post(url, '/v1/chat/completions', '"text"');
    const routedBad = await post(url, '/v1/chat/completions', '"text"', {
      'content-type': 'application/vnd.iop+json',
    });
    expect(hotBad.status).toBe(400);
    expect(hotBad.json()).toEqual(routedBad.json());
    expect((hotBad.json()['error'] as Record<string, unknown>)['code']).toBe('invalid_json');
  });

  it('applies the generation policy: min_max_tokens raises, default thinking budget fills in', async () => {
    const { client, service } = await start();
    await client.chat.completions.create(chatBody({ max_tokens: 10, reasoning_effort: 'high' }));
    await client.chat.completions.create(
      chatBody({ max_completion_tokens: 1000, thinking_token_budget: 99, think: true }),
    );
    await client.chat.completions.create(chatBody({}));
    expect(service.submitted.map((input) => [input.params?.maxTokens, input.params?.thinkingBudget])).toEqual(
      [
        [64, 256],
        [1000, 99],
        [512, undefined],
      ],
    );
    expect(service.submitted[1]?.params?.think).toBe(true);
  });

  it('streams chunks that finalChatCompletion() accepts, role first, usage chunk last', async () => {
    const { client } = await start({ scripter: () => ({ parts: textRun(['Hel', 'lo', '!']), delayMs: 2 }) });
    const final = await client.chat.completions
      .stream({ model: 'pooled', messages: user('hi'), stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe('Hello!');
    expect(final.choices[0]?.finish_reason).toBe('stop');

    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({
      model: 'pooled',
      messages: user('hi'),
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.slice(1, 4).map((chunk) => chunk.choices[0]?.delta.content)).toEqual(['Hel', 'lo', '!']);
    expect(chunks[4]?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks[5]?.choices).toEqual([]);
    expect(chunks[5]?.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 });
    expect(chunks.slice(0, 5).every((chunk) => chunk.usage === null)).toBe(true);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  });

  it('sends SSE framing with [DONE], event-stream headers and the overhead trailer', async () => {
    const { url } = await start();
    const response = await post(url, '/v1/chat/completions', {
      model: 'pooled',
      messages: user('hi'),
      stream: true,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-iop-overhead-ms')).toMatch(/^\d+\.\d\d$/);
    expect(response.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(
      response.text
        .split('\n\n')
        .filter(Boolean)
        .every((event) => event.startsWith('data: ')),
    ).toBe(true);
  });

  it('returns tool calls (non-streaming and streamed in pieces) and passes tool messages through', async () => {
    const { client, service } = await start({ scripter: () => ({ parts: toolCallParts }) });
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
    ];
    const plain = await client.chat.completions.create({
      model: 'pooled',
      messages: user('weather?'),
      tools,
    });
    expect(plain.choices[0]?.finish_reason).toBe('tool_calls');
    expect(plain.choices[0]?.message.content).toBeNull();
    expect(plain.choices[0]?.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    const streamed = await client.chat.completions
      .stream({ model: 'pooled', messages: user('weather?'), tools, tool_choice: 'auto' })
      .finalChatCompletion();
    expect(streamed.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_1',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(service.submitted[0]?.tools).toEqual([
      { name: 'get_weather', description: '', parametersJson: '{"type":"object","properties":{}}' },
    ]);
    expect(service.submitted[1]?.toolChoiceJson).toBe('"auto"');

    await client.chat.completions.create({
      model: 'pooled',
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    const messages = service.submitted[2]?.messages ?? [];
    expect(messages[1]?.toolCalls[0]).toMatchObject({
      id: 'call_1',
      name: 'get_weather',
      argumentsJson: '{}',
    });
    expect(messages[2]).toMatchObject({ role: 'tool', toolCallId: 'call_1', content: 'sunny' });
  });

  it('returns reasoning_content only when include_reasoning is set (strict output)', async () => {
    const { client, url } = await start({ scripter: () => ({ parts: reasoningParts }) });
    const withReasoning = await client.chat.completions.create(chatBody({ include_reasoning: true }));
    const message = withReasoning.choices[0]?.message as unknown as Record<string, unknown>;
    expect(message['reasoning_content']).toBe('thinking hard');
    expect(message['content']).toBe('Answer');
    const without = await client.chat.completions.create(chatBody({}));
    expect(without.choices[0]?.message.content).toBe('Answer');
    expect(
      (without.choices[0]?.message as unknown as Record<string, unknown>)['reasoning_content'],
    ).toBeUndefined();
    const streamed = await post(url, '/v1/chat/completions', {
      model: 'pooled',
      messages: user('hi'),
      stream: true,
      include_reasoning: true,
    });
    expect(streamed.text).toContain('"delta":{"reasoning_content":"thinking"}');
  });

  it('inlines unrequested reasoning as a <think> block when strict_output is false', async () => {
    const { client } = await start({ strictOutput: false, scripter: () => ({ parts: reasoningParts }) });
    const plain = await client.chat.completions.create(chatBody({}));
    expect(plain.choices[0]?.message.content).toBe('<think>thinking hard</think>Answer');
    const streamed = await client.chat.completions
      .stream({ model: 'pooled', messages: user('hi') })
      .finalChatCompletion();
    expect(streamed.choices[0]?.message.content).toBe('<think>thinking hard</think>Answer');
  });
});

describe('completions', () => {
  it('answers a text_completion through the pool, sending the prompt as a completion run', async () => {
    const { client, service } = await start();
    const { data, response } = await client.completions
      .create({ model: 'pooled', prompt: 'once upon', max_tokens: 100, seed: 3, stop: ['END'] })
      .withResponse();
    expect(data).toMatchObject({
      object: 'text_completion',
      model: 'pooled',
      choices: [{ text: 'Hello there', index: 0, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    expect(data.id).toMatch(/^cmpl-/);
    expect(response.headers.get('x-iop-provider')).toBe('prov-a');
    const input = service.submitted[0];
    expect(input).toMatchObject({
      kind: RunKind.RUN_KIND_COMPLETION,
      completion: { prompt: 'once upon', suffix: '' },
      messages: [],
      collect: true,
    });
    expect(input?.params).toMatchObject({ maxTokens: 100, seed: 3, stop: ['END'] });
  });

  it('streams text_completion chunks, a usage chunk and [DONE], leaving reasoning out', async () => {
    const { client, url } = await start({ strictOutput: false, scripter: () => ({ parts: reasoningParts }) });
    const whole = await client.completions.create({ model: 'pooled', prompt: 'x' });
    expect(whole.choices[0]?.text).toBe('Answer');
    const streamed = await post(url, '/v1/completions', {
      model: 'pooled',
      prompt: ['x'],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(streamed.text).toContain('"object":"text_completion"');
    expect(streamed.text).toContain(
      '"choices":[{"text":"Answer","index":0,"logprobs":null,"finish_reason":null}]',
    );
    expect(streamed.text).toContain('"finish_reason":"stop"');
    expect(streamed.text).toContain('"choices":[],"usage":{');
    expect(streamed.text).not.toContain('thinking');
    expect(streamed.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('refuses a CLI model, several prompts and an unknown model before any run', async () => {
    const { client, service } = await start();
    const cli = await client.completions
      .create({ model: 'codex', prompt: 'x' })
      .catch((caught: unknown) => caught);
    expect(cli).toBeInstanceOf(BadRequestError);
    expect((cli as BadRequestError).code).toBe('unsupported_model');
    const several = await client.completions
      .create({ model: 'pooled', prompt: ['a', 'b'] })
      .catch((caught: unknown) => caught);
    expect((several as BadRequestError).param).toBe('prompt');
    const missing = await client.completions
      .create({ model: 'nope', prompt: 'x' })
      .catch((caught: unknown) => caught);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(service.submitted).toHaveLength(0);
  });
});

describe('responses', () => {
  it('answers non-streaming with instructions as the system message', async () => {
    const { client, service } = await start();
    const response = await client.responses.create({
      model: 'pooled',
      instructions: 'reply briefly',
      input: 'hello',
      max_output_tokens: 256,
      metadata: { workspace: '/work/repo', request_id: 'r1' },
    });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello there');
    expect(response.usage).toMatchObject({ input_tokens: 5, output_tokens: 2, total_tokens: 7 });
    const input = service.submitted[0];
    expect(input?.messages.map((message) => [message.role, message.content])).toEqual([
      ['system', 'reply briefly'],
      ['user', 'hello'],
    ]);
    expect(input?.workspace).toBe('/work/repo');
    expect(input?.metadata).toEqual({ request_id: 'r1' });
    expect(input?.params?.maxTokens).toBe(256);
  });

  it('streams the event sequence responses.stream().finalResponse() accepts', async () => {
    const { client } = await start({ scripter: () => ({ parts: textRun(['Hi', ' you']), delayMs: 1 }) });
    const final = await client.responses.stream({ model: 'pooled', input: 'hello' }).finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output[0]).toMatchObject({
      type: 'message',
      content: [{ type: 'output_text', text: 'Hi you' }],
    });

    const types: string[] = [];
    const sequence: number[] = [];
    const stream = await client.responses.create({ model: 'pooled', input: 'hello', stream: true });
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
    }
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(sequence).toEqual(types.map((_, index) => index));
  });

  it('returns function_call items and converts function_call_output input items', async () => {
    const { client, service } = await start({ scripter: () => ({ parts: toolCallParts }) });
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: {} },
        strict: false,
      },
    ];
    const plain = await client.responses.create({ model: 'pooled', input: 'weather?', tools });
    expect(plain.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      }),
    ]);
    const streamed = await client.responses
      .stream({ model: 'pooled', input: 'weather?', tools })
      .finalResponse();
    expect(streamed.output[0]).toMatchObject({ type: 'function_call', arguments: '{"city":"Paris"}' });
    await client.responses.create({
      model: 'pooled',
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
      ],
    });
    const messages = service.submitted[2]?.messages ?? [];
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[1]?.toolCalls[0]).toMatchObject({ id: 'call_1', name: 'get_weather' });
    expect(messages[2]).toMatchObject({ toolCallId: 'call_1', content: 'sunny' });
  });
});

describe('more shapes', () => {
  it('responses: reasoning items with include_reasoning, incomplete status on a length stop', async () => {
    let parts: RunEventPart[] = reasoningParts;
    const { client } = await start({ scripter: () => ({ parts }) });
    const body = {
      model: 'pooled',
      input: 'x',
      include_reasoning: true,
    } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const plain = await client.responses.create(body);
    expect(plain.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(plain.output[0]).toMatchObject({ content: [{ type: 'reasoning_text', text: 'thinking hard' }] });
    const streamed = await client.responses
      .stream(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming)
      .finalResponse();
    expect(streamed.output[0]).toMatchObject({ type: 'reasoning', content: [{ text: 'thinking hard' }] });
    expect(streamed.output[1]).toMatchObject({ type: 'message', content: [{ text: 'Answer' }] });
    parts = [{ type: 'text-delta', text: 'cut' }, complete('length')];
    const cut = await client.responses.create({ model: 'pooled', input: 'x', max_output_tokens: 1 });
    expect(cut.status).toBe('incomplete');
    expect(cut.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    const chat = await client.chat.completions.create({ model: 'pooled', messages: user('x') });
    expect(chat.choices[0]?.finish_reason).toBe('length');
  });

  it('passes inline images and refuses remote image URLs', async () => {
    const { client, service } = await start();
    await client.chat.completions.create({
      model: 'pooled',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    expect(service.submitted[0]?.messages[0]).toMatchObject({
      content: 'what is this?',
      images: ['iVBORw0KGgo='],
    });
    // An http(s) URL is kept as is for the OpenAI-compatible backend (vLLM here); data: URLs still go inline.
    const remoteUrl = 'https://images.example/a.png?x=1';
    await client.chat.completions.create({
      model: 'pooled',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: remoteUrl } }] }],
    });
    expect(service.submitted[1]?.messages[0]).toMatchObject({ images: [], imageUrls: [remoteUrl] });
    expect(service.submitted[1]?.fetchImageUrls).toBeUndefined();
    await client.responses.create({
      model: 'pooled',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: remoteUrl, detail: 'auto' }] }],
    });
    expect(service.submitted[2]?.messages[0]).toMatchObject({ images: [], imageUrls: [remoteUrl] });
    // Other schemes are refused with the part's path.
    const ftp = await client.chat.completions
      .create({
        model: 'pooled',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://example.com/a.png' } }] },
        ],
      })
      .catch((error: unknown) => error);
    expect(ftp).toBeInstanceOf(BadRequestError);
    expect((ftp as APIError).param).toBe('messages[0].content[0].image_url');
    expect((ftp as APIError).code).toBe('unsupported_image_url');
    // Ollama (without fetch_image_urls) and CLI backends refuse remote images, naming the model and backend.
    for (const [model, backend] of [
      ['llama3', 'Ollama'],
      ['codex', 'CLI agent'],
    ] as const) {
      const refused = await client.chat.completions
        .create({
          model,
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: remoteUrl } }] }],
          metadata: { workspace: 'w' },
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(BadRequestError);
      expect((refused as APIError).code).toBe('unsupported_image_url');
      expect((refused as APIError).message).toContain(`Model '${model}'`);
      expect((refused as APIError).message).toContain(backend);
    }
    expect(service.submitted).toHaveLength(3);
  });

  it('refuses more image URLs than the model takes (image_limits.max_urls) with 400, before any run', async () => {
    const { client, service } = await start();
    const urls = Array.from({ length: 64 }, (_, index) => `https://images.example/${index}.png`);
    const content = urls.map((url) => ({ type: 'image_url' as const, image_url: { url } }));
    const refused = await client.chat.completions
      .create({ model: 'pooled', messages: [{ role: 'user', content }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect((refused as APIError).code).toBe('too_many_image_urls');
    expect((refused as APIError).message).toContain('at most 16');
    const input = [
      {
        role: 'user' as const,
        content: urls.map((url) => ({
          type: 'input_image' as const,
          image_url: url,
          detail: 'auto' as const,
        })),
      },
    ];
    const viaResponses = await client.responses
      .create({ model: 'pooled', input })
      .catch((error: unknown) => error);
    expect((viaResponses as APIError).code).toBe('too_many_image_urls');
    expect(service.submitted).toHaveLength(0);
    // Sixteen are taken.
    await client.chat.completions.create({
      model: 'pooled',
      messages: [{ role: 'user', content: content.slice(0, 16) }],
    });
    expect(service.submitted).toHaveLength(1);
  });

  it('an operator cancel before output is a 502 run_cancelled', async () => {
    const { client, service } = await start({ scripter: () => ({ parts: textRun(['late']), delayMs: 200 }) });
    const pending = client.chat.completions
      .create({ model: 'pooled', messages: user('x') })
      .catch((error: unknown) => error);
    await eventually(() => expect(service.active).toBe(1));
    await service.cancelRun('run-1');
    const error = (await pending) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('run_cancelled');
  });

  it('a client abort of a non-streaming request cancels the run', async () => {
    const { url, service } = await start({ scripter: () => ({ parts: textRun(['slow']), delayMs: 300 }) });
    const controller = new AbortController();
    const pending = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pooled', messages: user('x') }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await eventually(() => expect(service.active).toBe(1));
    controller.abort();
    await pending;
    await eventually(() => expect(service.cancels).toBe(1));
  });
});

describe('connection reuse', () => {
  it('serves many requests on one keep-alive connection without piling up disconnect listeners', async () => {
    const { url, server } = await start();
    const serverSockets: Socket[] = [];
    server.on('connection', (socket: Socket) => serverSockets.push(socket));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let index = 0; index < 30; index += 1) {
        const status = await new Promise<number>((resolve, reject) => {
          const request = http.request(
            `${url}/v1/chat/completions`,
            { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
            (response) => {
              response.resume();
              response.on('end', () => resolve(response.statusCode ?? 0));
            },
          );
          request.on('error', reject);
          request.end(JSON.stringify({ model: 'pooled', messages: user('x') }));
        });
        expect(status).toBe(200);
      }
      expect(serverSockets).toHaveLength(1);
      const socket = serverSockets[0];
      const signal = disconnectSignal(socket);
      expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
      await eventually(() => expect(abortWatcherCount(signal)).toBe(0));
    } finally {
      agent.destroy();
    }
  });
});

describe('background responses', () => {
  it('answers queued at once, then completes; retrieve polls it', async () => {
    const { client, service } = await start({
      scripter: () => ({ parts: textRun(['done', '!']), delayMs: 20 }),
    });
    const queued = await client.responses.create({ model: 'pooled', input: 'work', background: true });
    expect(queued).toMatchObject({ status: 'queued', background: true, output: [] });
    let current = queued;
    await eventually(async () => {
      current = await client.responses.retrieve(queued.id);
      expect(current.status).toBe('completed');
    });
    expect(current.output[0]).toMatchObject({
      type: 'message',
      content: [{ type: 'output_text', text: 'done!' }],
    });
    expect(current.background).toBe(true);
    expect(service.submitted).toHaveLength(1);
  });

  it('cancel stops a running background response and frees its slot', async () => {
    const { client, service, pool } = await start({
      scripter: () => ({ parts: textRun(['slow']), delayMs: 500 }),
    });
    const queued = await client.responses.create({ model: 'pooled', input: 'work', background: true });
    await eventually(() => expect(service.active).toBe(1));
    const cancelled = await client.responses.cancel(queued.id);
    expect(cancelled.status).toBe('cancelled');
    await eventually(() => {
      expect(service.cancels).toBe(1);
      expect(pool.totals().inFlight).toBe(0);
    });
    expect((await client.responses.retrieve(queued.id)).status).toBe('cancelled');
  });

  it('records failures, refuses background streams and unknown ids', async () => {
    const { client, url } = await start({
      scripter: () => ({
        parts: [{ type: 'error', code: 'backend_error', message: 'boom', retryable: false, backendMs: 0 }],
      }),
    });
    const queued = await client.responses.create({ model: 'pooled', input: 'x', background: true });
    await eventually(async () => {
      const current = await client.responses.retrieve(queued.id);
      expect(current.status).toBe('failed');
      expect(current.error).toEqual({ code: 'backend_error', message: 'boom' });
    });
    const streamed = await post(url, '/v1/responses', {
      model: 'pooled',
      input: 'x',
      background: true,
      stream: true,
    });
    expect(streamed.status).toBe(400);
    const missing = await client.responses.retrieve('resp_missing').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as APIError).code).toBe('response_not_found');
  });
});

describe('routing', () => {
  it('uses model_routes, requires metadata.workspace where the route says so', async () => {
    const { client, service } = await start();
    await client.chat.completions.create({ model: 'llama3', messages: user('hi') });
    expect(service.submitted[0]).toMatchObject({ adapter: 'ollama', target: 'llama3:8b', node: undefined });
    const refused = await client.chat.completions
      .create({ model: 'codex', messages: user('fix it') })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect((refused as APIError).code).toBe('workspace_required');
    expect((refused as APIError).param).toBe('metadata.workspace');
    await client.chat.completions.create({
      model: 'codex',
      messages: user('fix it'),
      metadata: { workspace: '/repo' },
    });
    expect(service.submitted[1]).toMatchObject({
      adapter: 'cli',
      target: 'codex',
      node: 'node-1',
      workspace: '/repo',
    });
  });

  it('falls back to the top-level adapter/target: fixed target, or the request model when empty', async () => {
    const fixed = await start({ openai: "  adapter: 'ollama'\n  target: 'qwen3:8b'" });
    await fixed.client.chat.completions.create({ model: 'anything', messages: user('hi') });
    expect(fixed.service.submitted[0]).toMatchObject({ adapter: 'ollama', target: 'qwen3:8b' });
    await fixed.client.chat.completions.create({ model: 'llama3', messages: user('hi') });
    expect(fixed.service.submitted[1]).toMatchObject({ adapter: 'ollama', target: 'llama3:8b' });
    await fixed.close();
    harness = undefined;
    const open = await start({ openai: "  adapter: 'ollama'" });
    await open.client.chat.completions.create({ model: 'mistral:7b', messages: user('hi') });
    expect(open.service.submitted[0]).toMatchObject({ adapter: 'ollama', target: 'mistral:7b' });
  });
});

describe('errors', () => {
  async function apiError(promise: Promise<unknown>): Promise<APIError> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!(error instanceof APIError)) throw new Error(`expected an APIError, got ${String(error)}`);
    return error;
  }

  it('400 names an unsupported provider-specific field', async () => {
    const { client, service } = await start();
    for (const [fields, param] of [
      [{ options: { num_ctx: 8 } }, 'options'],
      [{ keep_alive: 0 }, 'keep_alive'],
      [{ format: 'json' }, 'format'],
      [{ metadata: { cli: 'x' } }, 'metadata.cli'],
      [{ metadata: { source: 'x' } }, 'metadata.source'],
      [{ metadata: { inference: 'x' } }, 'metadata.inference'],
    ] as const) {
      const error = await apiError(client.chat.completions.create(chatBody(fields)));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.param).toBe(param);
      expect(error.code).toBe('unsupported_field');
      expect(error.message).toContain(`'${param}'`);
    }
    const responses = await apiError(
      client.responses.create({
        model: 'pooled',
        input: 'x',
        options: {},
      } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming),
    );
    expect(responses.param).toBe('options');
    expect(service.submitted).toHaveLength(0);
  });

  it('400 for invalid bodies, with the error shape and parameter path', async () => {
    const { url } = await start();
    const missing = await post(url, '/v1/chat/completions', { model: 'pooled' });
    expect(missing.status).toBe(400);
    expect(missing.json()).toEqual({
      error: {
        message: "Missing required parameter: 'messages'",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'invalid_request',
      },
    });
    const badRole = await post(url, '/v1/chat/completions', {
      model: 'pooled',
      messages: [{ role: 'robot', content: 'x' }],
    });
    expect((badRole.json()['error'] as Record<string, unknown>)['param']).toBe('messages[0].role');
    const badJson = await post(url, '/v1/chat/completions', '{"model":');
    expect(badJson.status).toBe(400);
    expect((badJson.json()['error'] as Record<string, unknown>)['code']).toBe('invalid_json');
    const metadata = await post(url, '/v1/responses', { model: 'pooled', input: 'x', metadata: { n: 1 } });
    expect((metadata.json()['error'] as Record<string, unknown>)['param']).toBe('metadata.n');
    const unknownPath = await post(url, '/v1/audio/speech', { model: 'pooled', input: 'x' });
    expect(unknownPath.status).toBe(404);
    expect(unknownPath.headers.get('x-iop-overhead-ms')).not.toBeNull();
  });

  it('401 for a missing or wrong API key when api_keys are configured', async () => {
    const { client, url } = await start({ openai: "  api_keys: ['sk-one', 'test-key']" });
    expect((await client.models.list()).data.length).toBeGreaterThan(0);
    const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    const error = await apiError(wrong.chat.completions.create({ model: 'pooled', messages: user('hi') }));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('invalid_api_key');
    const missing = await post(url, '/v1/chat/completions', { model: 'pooled', messages: user('hi') });
    expect(missing.status).toBe(401);
    // The express path (another JSON media type) refuses the same way.
    const routed = await post(
      url,
      '/v1/chat/completions',
      { model: 'pooled', messages: user('hi') },
      {
        'content-type': 'application/vnd.iop+json',
      },
    );
    expect(routed.status).toBe(401);
    expect(routed.json()).toEqual(missing.json());
    expect(routed.headers.get('content-type')).toBe(missing.headers.get('content-type'));
    expect(routed.headers.get('x-iop-overhead-ms')).not.toBeNull();
  });

  it('404 model_not_found for an unknown model without a fallback route', async () => {
    const { client } = await start();
    const error = await apiError(client.chat.completions.create({ model: 'nope', messages: user('hi') }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('model_not_found');
    expect(error.param).toBe('model');
    expect(error.message).toContain("The model 'nope' does not exist");
  });

  it('429 with Retry-After when the queue is full, 503 queue_timeout when waiting too long', async () => {
    const { url } = await start({
      capacityA: 1,
      capacityB: 1,
      maxQueue: 1,
      queueTimeoutMs: 150,
      scripter: () => ({ parts: textRun(['slow']), delayMs: 120 }),
    });
    const requests = Array.from({ length: 5 }, () =>
      post(url, '/v1/chat/completions', { model: 'pooled', messages: user('hi') }),
    );
    const results = await Promise.all(requests);
    const statuses = results.map((result) => result.status).sort();
    // 2 slots run, 2 wait (max_queue 1 per provider), the fifth is refused at once.
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(2);
    const full = results.find((result) => result.status === 429);
    expect(full?.headers.get('retry-after')).toBe('1');
    expect(full?.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'queue_full' } });
    const timedOut = results.find((result) => result.status === 503);
    expect(timedOut?.json()).toMatchObject({ error: { code: 'queue_timeout' } });
  });

  it('503 when no provider is available', async () => {
    const { client, nodes } = await start();
    nodes.disconnect('node-1');
    nodes.disconnect('node-2');
    const error = await apiError(client.chat.completions.create({ model: 'pooled', messages: user('hi') }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('no_provider_available');
  });

  it('504 for a run timeout and 502 for an upstream failure before output', async () => {
    let code = 'timeout';
    const { client } = await start({
      scripter: () => ({
        parts: [{ type: 'error', code, message: `backend said ${code}`, retryable: false, backendMs: 0 }],
      }),
    });
    const timeout = await apiError(client.chat.completions.create({ model: 'pooled', messages: user('hi') }));
    expect(timeout.status).toBe(504);
    code = 'backend_http_500';
    const upstream = await apiError(
      client.chat.completions.create({ model: 'pooled', messages: user('hi'), stream: true }),
    );
    expect(upstream.status).toBe(502);
    expect(upstream.code).toBe('backend_http_500');
    const responses = await apiError(client.responses.create({ model: 'pooled', input: 'x', stream: true }));
    expect(responses.status).toBe(502);
  });

  it('a mid-stream failure becomes an SSE error object and the stream ends', async () => {
    const failing: RunEventPart[] = [
      { type: 'text-delta', text: 'partial' },
      { type: 'error', code: 'backend_error', message: 'backend crashed', retryable: false, backendMs: 0 },
    ];
    const { client, url } = await start({ scripter: () => ({ parts: failing }) });
    const raw = await post(url, '/v1/chat/completions', {
      model: 'pooled',
      messages: user('hi'),
      stream: true,
    });
    expect(raw.status).toBe(200);
    expect(raw.text).toContain(
      'data: {"error":{"message":"backend crashed","type":"upstream_error","param":null,"code":"backend_error"}}',
    );
    expect(raw.text).not.toContain('[DONE]');
    const error = await apiError(
      client.chat.completions.stream({ model: 'pooled', messages: user('hi') }).finalChatCompletion(),
    );
    expect(error.message).toContain('backend crashed');
    const responses = await apiError(
      client.responses.stream({ model: 'pooled', input: 'x' }).finalResponse(),
    );
    expect(responses.message).toContain('backend crashed');
  });

  it('strict_stream_buffer turns a failing stream into a plain HTTP error', async () => {
    const failing: RunEventPart[] = [
      { type: 'text-delta', text: 'partial' },
      { type: 'error', code: 'backend_error', message: 'backend crashed', retryable: false, backendMs: 0 },
    ];
    let parts = failing;
    const { url, client } = await start({
      openai: '  strict_stream_buffer: true',
      scripter: () => ({ parts }),
    });
    const raw = await post(url, '/v1/chat/completions', {
      model: 'pooled',
      messages: user('hi'),
      stream: true,
    });
    expect(raw.status).toBe(502);
    parts = textRun(['all', ' at once']);
    const ok = await client.chat.completions
      .stream({ model: 'pooled', messages: user('hi') })
      .finalChatCompletion();
    expect(ok.choices[0]?.message.content).toBe('all at once');
  });

  it('node disconnect mid-stream ends the stream with an error and frees the provider', async () => {
    const { client, service, pool } = await start({
      scripter: () => ({ parts: textRun(['a', 'b', 'c', 'd', 'e', 'f']), delayMs: 40 }),
    });
    const stream = client.chat.completions.stream({ model: 'pooled', messages: user('hi') });
    const failure = stream.finalChatCompletion().then(
      () => undefined,
      (error: unknown) => error,
    );
    await eventually(() => expect(pool.totals().inFlight).toBe(1));
    await new Promise((resolve) => setTimeout(resolve, 60));
    service.disconnectNode('node-1');
    const error = await failure;
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain('node node-1 disconnected');
  });
});

describe('client disconnect and capacity', () => {
  it('a client abort mid-stream cancels the run on the node and releases the lease', async () => {
    const { client, service, pool } = await start({
      scripter: () => ({
        parts: textRun(Array.from({ length: 50 }, (_, index) => `t${index} `)),
        delayMs: 20,
      }),
    });
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'pooled', messages: user('hi'), stream: true },
      { signal: controller.signal },
    );
    let received = 0;
    // The SDK ends the iteration quietly when its own signal aborts.
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) received += 1;
      if (received === 2) controller.abort();
    }
    expect(received).toBe(2);
    await eventually(() => {
      expect(service.cancels).toBe(1);
      expect(pool.totals().inFlight).toBe(0);
      expect(service.active).toBe(0);
    });
  });

  it('a client that leaves while queued leaves the queue', async () => {
    const { url, pool, service } = await start({
      capacityA: 1,
      capacityB: 1,
      maxQueue: 4,
      queueTimeoutMs: 5000,
      scripter: () => ({ parts: textRun(['x']), delayMs: 150 }),
    });
    const busy = [1, 2].map(() =>
      post(url, '/v1/chat/completions', { model: 'pooled', messages: user('hi') }),
    );
    await eventually(() => expect(pool.totals().inFlight).toBe(2));
    const controller = new AbortController();
    const queued = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pooled', messages: user('hi') }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await eventually(() => expect(pool.totals().queued).toBe(1));
    controller.abort();
    await queued;
    await eventually(() => expect(pool.totals().queued).toBe(0));
    await Promise.all(busy);
    expect(service.submitted).toHaveLength(2);
  });

  it('never exceeds provider capacity under 200 concurrent HTTP requests', async () => {
    const { client, service } = await start({
      capacityA: 3,
      capacityB: 2,
      maxQueue: 200,
      queueTimeoutMs: 20_000,
      scripter: () => ({ parts: textRun(['a', 'b']), delayMs: 1 }),
    });
    const requests = Array.from({ length: 200 }, async (_, index) =>
      index % 2 === 0
        ? (await client.chat.completions.create({ model: 'pooled', messages: user(`q${index}`) })).choices[0]
            ?.message.content
        : (
            await client.chat.completions
              .stream({ model: 'pooled', messages: user(`q${index}`) })
              .finalChatCompletion()
          ).choices[0]?.message.content,
    );
    const results = await Promise.all(requests);
    expect(results.every((content) => content === 'ab')).toBe(true);
    expect(service.peakActive).toBeLessThanOrEqual(5);
    expect(service.peakByProvider.get('prov-a')).toBe(3);
    expect(service.peakByProvider.get('prov-b')).toBe(2);
    expect(service.submitted).toHaveLength(200);
    expect(new Set(service.submitted.map((input) => input.providerId))).toEqual(
      new Set(['prov-a', 'prov-b']),
    );
  });
});
