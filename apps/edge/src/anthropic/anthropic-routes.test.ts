import { afterEach, describe, expect, it } from '@jest/globals';
import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import type { RunEventPart } from '@iop/wire';
import { textRun } from '../test-support/fake-edge-service.js';
import { eventually, post, type HarnessOptions } from '../surface-kit/test-support/surface-harness.js';
import {
  NOT_MOUNTED,
  startAnthropicHarness,
  type AnthropicHarness,
} from './test-support/anthropic-harness.js';
import { thinkingSignature } from './messages-output.js';
import { TOKENS_PER_MESSAGE } from './token-estimate.js';

let harness: AnthropicHarness | undefined;

async function start(options: HarnessOptions & { apiKey?: string } = {}): Promise<AnthropicHarness> {
  harness = await startAnthropicHarness(options);
  return harness;
}

afterEach(async () => {
  if (!harness) return;
  const current = harness;
  harness = undefined;
  // Every test leaves the pool empty and no run alive.
  await eventually(() => {
    expect(current.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    expect(current.service.active).toBe(0);
  });
  await current.close();
});

const usage = (promptTokens: number, completionTokens: number, cachedTokens = 0) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
  reasoningTokens: 0,
  cachedTokens,
  costUsd: 0,
});
const complete = (finishReason = 'stop'): RunEventPart => ({
  type: 'complete',
  detail: finishReason,
  finishReason,
  backendMs: 1,
});
const ask = (text: string) => [{ role: 'user' as const, content: text }];

/** Fields the SDK's types no longer list but the API (and this surface) takes. */
type WithSampling = Anthropic.MessageCreateParamsNonStreaming & {
  temperature?: number;
  top_p?: number;
  top_k?: number;
};

async function apiError(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

/** The `event:` names of a raw SSE body, in order. */
function eventNames(body: string): string[] {
  return [...body.matchAll(/^event: (\S+)$/gm)].map((match) => match[1] ?? '');
}

describe('POST /v1/messages', () => {
  it('answers messages.create with text, usage and end_turn, through the pool as surface anthropic', async () => {
    const { client, service } = await start({
      scripter: () => ({
        parts: [...textRun(['Hello', ' there']).slice(0, -2), usageOf(9, 2, 3), complete()],
      }),
    });
    const body: WithSampling = {
      model: 'pooled',
      max_tokens: 100,
      system: 'Be brief.',
      messages: ask('hi'),
      stop_sequences: ['END'],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'user-7' },
    };
    const { data, response } = await client.messages.create(body).withResponse();
    expect(data).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'pooled',
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 6,
        output_tokens: 2,
        cache_read_input_tokens: 3,
        cache_creation_input_tokens: 0,
      },
    });
    expect(data.id).toMatch(/^msg_/);
    expect(response.headers.get('x-iop-provider')).toBe('prov-a');
    expect(response.headers.get('content-type')).toContain('application/json');
    const submitted = service.submitted[0];
    expect(submitted).toMatchObject({ surface: 'anthropic', providerId: 'prov-a', collect: true });
    expect(submitted?.messages.map((message) => [message.role, message.content])).toEqual([
      ['system', 'Be brief.'],
      ['user', 'hi'],
    ]);
    expect(submitted?.params).toMatchObject({
      maxTokens: 100,
      temperature: 0.3,
      topP: 0.9,
      topK: 40,
      stop: ['END'],
      includeReasoning: true,
    });
    expect(submitted?.params?.think).toBeUndefined();
    expect(submitted?.metadata).toEqual({ user_id: 'user-7' });
  });

  it('streams with system blocks: every event type in order, ping included, and the SDK assembles the message', async () => {
    const { client, service, bodies } = await start({
      scripter: () => ({
        parts: [
          { type: 'reasoning-delta', text: 'Let me ' },
          { type: 'reasoning-delta', text: 'think.' },
          { type: 'text-delta', text: 'It is' },
          { type: 'text-delta', text: ' sunny.' },
          {
            type: 'tool-call',
            call: { id: 'call_9', name: 'get_weather', argumentsJson: '{"city":', index: 0 },
          },
          { type: 'tool-call', call: { id: 'call_9', name: '', argumentsJson: '"Paris"}', index: 0 } },
          usageOf(12, 7),
          complete('tool_calls'),
        ],
      }),
    });
    const stream = client.messages.stream({
      model: 'pooled',
      max_tokens: 2048,
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Use tools.' },
      ],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      tools: [
        {
          name: 'get_weather',
          description: 'Weather of a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      messages: ask('weather in Paris?'),
    });
    const seen: string[] = [];
    stream.on('streamEvent', (event) => seen.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: thinkingSignature('Let me think.') },
      { type: 'text', text: 'It is sunny.' },
      { type: 'tool_use', id: 'call_9', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage).toMatchObject({ input_tokens: 12, output_tokens: 7 });
    await eventually(() => expect(bodies.length).toBe(1));
    const raw = bodies[0] ?? '';
    expect(eventNames(raw)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    // The SDK hides pings; everything else reaches it.
    expect(seen).toEqual(eventNames(raw).filter((name) => name !== 'ping'));
    for (const delta of ['thinking_delta', 'signature_delta', 'text_delta', 'input_json_delta']) {
      expect(raw).toContain(`"type":"${delta}"`);
    }
    const submitted = service.submitted[0];
    expect(submitted?.collect).toBe(false);
    expect(submitted?.messages[0]).toMatchObject({ role: 'system', content: 'You are terse.\n\nUse tools.' });
    expect(submitted?.tools?.[0]).toMatchObject({ name: 'get_weather', description: 'Weather of a city' });
    // thinking.enabled: reasoning on with its budget (the generation policy leaves a given budget alone).
    expect(submitted?.params).toMatchObject({ think: true, thinkingBudget: 1024 });
  });

  it('passes a tool_use round trip back to the backend: assistant tool calls and the tool_result', async () => {
    const { client, service } = await start({
      scripter: (input) =>
        input.messages.some((message) => message.role === 'tool')
          ? { parts: [...textRun(['It is 21 C']).slice(0, -1), complete()] }
          : {
              parts: [
                {
                  type: 'tool-call',
                  call: { id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Paris"}', index: 0 },
                },
                complete('tool_calls'),
              ],
            },
    });
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ];
    const first = await client.messages.create({
      model: 'pooled',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: ask('weather?'),
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content[0];
    expect(call).toEqual({ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } });
    const second = await client.messages.create({
      model: 'pooled',
      max_tokens: 200,
      tools,
      messages: [
        ...ask('weather?'),
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '21 C' }] },
            { type: 'text', text: 'and tomorrow?' },
          ],
        },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'It is 21 C' }]);
    expect(second.stop_reason).toBe('end_turn');
    expect(service.submitted[0]?.toolChoiceJson).toBe(
      '{"type":"function","function":{"name":"get_weather"}}',
    );
    const received = service.submitted[1]?.messages ?? [];
    expect(received.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(received[1]?.toolCalls).toEqual([
      { id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Paris"}', index: 0 },
    ]);
    expect(received[2]).toMatchObject({ role: 'tool', toolCallId: 'call_1', content: '21 C' });
    expect(received[3]).toMatchObject({ role: 'user', content: 'and tomorrow?' });
  });

  it('maps content blocks: base64 images, thinking history, tool errors, mid-conversation system messages', async () => {
    const { client, service } = await start();
    await client.messages.create({
      model: 'pooled',
      max_tokens: 50,
      thinking: { type: 'disabled' },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'a picture', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'tool_use', id: 't1', name: 'zoom', input: {} },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', content: 'no zoom', is_error: true }],
        },
        { role: 'system' as 'user', content: 'Mid-conversation note.' },
      ],
    });
    const messages = service.submitted[0]?.messages ?? [];
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'system']);
    expect(messages[0]).toMatchObject({ content: 'what is this?', images: ['iVBORw0KGgo='] });
    expect(messages[1]).toMatchObject({ reasoning: 'a picture', content: '' });
    expect(messages[2]).toMatchObject({ toolCallId: 't1', content: 'Error: no zoom' });
    expect(service.submitted[0]?.params?.think).toBe(false);
  });

  it('maps output_config.effort with thinking enabled and leaves adaptive thinking to the model', async () => {
    const { client, service } = await start();
    const effort = { output_config: { effort: 'max' as const } };
    await client.messages.create({
      model: 'pooled',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: ask('x'),
      ...effort,
    });
    await client.messages.create({
      model: 'pooled',
      max_tokens: 4096,
      thinking: { type: 'adaptive' },
      messages: ask('x'),
      ...effort,
    });
    expect(service.submitted[0]?.params).toMatchObject({ reasoningEffort: 'high', think: true });
    expect(service.submitted[1]?.params).toMatchObject({ reasoningEffort: '' });
    expect(service.submitted[1]?.params?.think).toBeUndefined();
    expect(service.submitted[1]?.params?.thinkingBudget).toBeUndefined();
  });

  it('refuses what it cannot honour with invalid_request_error naming it, before any run', async () => {
    const { client, url, service } = await start();
    const refuse = async (body: Record<string, unknown>, message: string) => {
      const response = await post(url, '/v1/messages', body);
      expect(response.status).toBe(400);
      expect(response.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
      });
    };
    const base = { model: 'pooled', max_tokens: 10, messages: ask('x') };
    await refuse({ ...base, frequency_penalty: 1, mcp_servers: [] }, 'frequency_penalty, mcp_servers:');
    await refuse({ model: 'pooled', messages: ask('x') }, 'max_tokens: Field required');
    await refuse({ ...base, temperature: 1.5 }, 'temperature');
    await refuse({ ...base, messages: [] }, 'messages');
    await refuse({ ...base, metadata: { user_id: 'u', tenant: 't' } }, 'metadata.tenant');
    await refuse({ ...base, output_config: { format: { type: 'json_schema' } } }, 'output_config.format');
    await refuse(
      { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      'tools.0.type: "web_search_20250305" is a server tool',
    );
    await refuse(
      { ...base, tool_choice: { type: 'any', disable_parallel_tool_use: true } },
      'tool_choice.disable_parallel_tool_use',
    );
    await refuse(
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'http://x/a.png' } }] },
        ],
      },
      "messages.0.content.0.source.type: 'url' image sources are not supported",
    );
    await refuse(
      { ...base, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] },
      'messages.0.content.0.type: Input should be "text", "image"',
    );
    await refuse(
      { ...base, messages: [{ role: 'user', content: [{ type: 'text' }] }] },
      'messages.0.content.0.text',
    );
    await refuse({ ...base, thinking: { type: 'enabled' } }, 'thinking.budget_tokens: Field required');
    await refuse(
      {
        ...base,
        messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }],
      },
      "messages.0.content.0: a 'tool_use' block is not allowed in a user message",
    );
    const notJson = await fetch(`${url}/v1/messages`, { method: 'POST', body: '{"model":"pooled"' });
    expect(notJson.status).toBe(400);
    const sdk = await apiError(client.messages.create({ ...base, model: 'pooled', max_tokens: 0 }));
    expect(sdk).toBeInstanceOf(BadRequestError);
    expect(sdk.type).toBe('invalid_request_error');
    // Accepted and ignored: Anthropic's own service options.
    const ignored = await post(url, '/v1/messages', {
      ...base,
      cache_control: { type: 'ephemeral' },
      context_management: { edits: [] },
      service_tier: 'auto',
    });
    expect(ignored.status).toBe(200);
    expect(service.submitted).toHaveLength(1);
  });

  it('404 not_found_error for an unknown model and for a model outside the key allow-list', async () => {
    const { client, url } = await start({
      openai: "  api_keys: [{ id: 'narrow', key: 'narrow-key', models: ['llama3'] }, 'test-key']",
    });
    const error = await apiError(
      client.messages.create({ model: 'nope', max_tokens: 5, messages: ask('x') }),
    );
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.status).toBe(404);
    expect(error.type).toBe('not_found_error');
    expect(error.error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: "model: 'nope' does not exist" },
    });
    const hidden = await post(
      url,
      '/v1/messages',
      { model: 'pooled', max_tokens: 5, messages: ask('x') },
      { 'x-api-key': 'narrow-key' },
    );
    expect(hidden.status).toBe(404);
    expect(hidden.json()).toMatchObject({ error: { type: 'not_found_error' } });
  });

  it('authenticates with x-api-key or Authorization: Bearer, and answers 401 authentication_error otherwise', async () => {
    const { url, client } = await start({ openai: "  api_keys: ['sk-one', 'test-key']" });
    const body = { model: 'pooled', max_tokens: 5, messages: ask('x') };
    expect((await post(url, '/v1/messages', body, { 'x-api-key': 'sk-one' })).status).toBe(200);
    expect((await post(url, '/v1/messages', body, { authorization: 'Bearer sk-one' })).status).toBe(200);
    const missing = await post(url, '/v1/messages', body);
    expect(missing.status).toBe(401);
    expect(missing.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const wrong = new Anthropic({ baseURL: url, apiKey: 'sk-wrong', maxRetries: 0 });
    expect(await apiError(wrong.messages.create(body))).toBeInstanceOf(AuthenticationError);
    expect((await client.messages.create(body)).content).toEqual([{ type: 'text', text: 'Hello there' }]);
  });

  it('429 rate_limit_error with retry-after when the queue is full, 529 overloaded_error on queue timeout', async () => {
    const { url, client } = await start({
      capacityA: 1,
      capacityB: 1,
      maxQueue: 1,
      queueTimeoutMs: 150,
      scripter: () => ({ parts: textRun(['slow']), delayMs: 120 }),
    });
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        post(url, '/v1/messages', { model: 'pooled', max_tokens: 5, messages: ask('x') }),
      ),
    );
    expect(results.filter((result) => result.status === 200).length).toBeGreaterThanOrEqual(2);
    const full = results.find((result) => result.status === 429);
    expect(full?.headers.get('retry-after')).toBe('1');
    expect(full?.json()).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.any(String) },
    });
    const timedOut = results.find((result) => result.status === 529);
    expect(timedOut?.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(timedOut?.headers.get('retry-after')).toBe('1');
    // The SDK classifies the 429 as its RateLimitError.
    const burst = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.messages.create({ model: 'pooled', max_tokens: 5, messages: ask('x') }).then(
          () => undefined,
          (error: unknown) => error,
        ),
      ),
    );
    expect(burst.some((error) => error instanceof RateLimitError)).toBe(true);
  });

  it('a failure before output is an HTTP error; after output an SSE error event the SDK throws', async () => {
    let parts: RunEventPart[] = [
      { type: 'error', code: 'backend_http_500', message: 'backend said no', retryable: false, backendMs: 0 },
    ];
    const { client, bodies } = await start({ scripter: () => ({ parts }) });
    const before = await apiError(
      client.messages.create({ model: 'pooled', max_tokens: 5, messages: ask('x'), stream: true }),
    );
    expect(before.status).toBe(502);
    expect(before.type).toBe('api_error');
    parts = [
      { type: 'text-delta', text: 'partial' },
      { type: 'error', code: 'backend_error', message: 'backend crashed', retryable: false, backendMs: 0 },
    ];
    const stream = client.messages.stream({ model: 'pooled', max_tokens: 5, messages: ask('x') });
    const during = await apiError(stream.finalMessage());
    expect(during.type).toBe('api_error');
    expect(during.message).toContain('backend crashed');
    await eventually(() => expect(bodies.some((body) => body.includes('event: error'))).toBe(true));
  });

  it('answers an empty run with one empty text block and a length stop as max_tokens', async () => {
    let finish = 'stop';
    const { client } = await start({ scripter: () => ({ parts: [complete(finish)] }) });
    const empty = await client.messages
      .stream({ model: 'pooled', max_tokens: 5, messages: ask('x') })
      .finalMessage();
    expect(empty.content).toEqual([{ type: 'text', text: '' }]);
    finish = 'length';
    const cut = await client.messages.create({ model: 'pooled', max_tokens: 5, messages: ask('x') });
    expect(cut.stop_reason).toBe('max_tokens');
  });

  it('runs on a CLI provider through a route that needs no workspace (the fallback), in a session slot', async () => {
    const { client, service } = await start({ openai: "  adapter: 'cli'\n  target: 'claude'" });
    const message = await client.messages.create({ model: 'any-agent', max_tokens: 5, messages: ask('x') });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello there' }]);
    expect(service.submitted[0]).toMatchObject({
      surface: 'anthropic',
      adapter: 'cli',
      target: 'claude',
      sessionId: 'openai',
    });
  });

  it('refuses a CLI route that needs a workspace (the Messages API cannot name one)', async () => {
    const { url } = await start();
    const response = await post(url, '/v1/messages', { model: 'codex', max_tokens: 5, messages: ask('x') });
    expect(response.status).toBe(400);
    expect(response.json()).toMatchObject({ error: { message: expect.stringContaining('workspace') } });
  });
});

describe('POST /v1/messages/count_tokens', () => {
  it('estimates input tokens (countTokens) without starting a run', async () => {
    const { client, service } = await start();
    const counted = await client.messages.countTokens({
      model: 'pooled',
      system: 'abcd'.repeat(10),
      messages: ask('efgh'.repeat(5)),
    });
    // Two messages (system, user) and 60 bytes of text.
    expect(counted).toEqual({ input_tokens: 2 * TOKENS_PER_MESSAGE + 15 });
    const withTools = await client.messages.countTokens({
      model: 'pooled',
      messages: ask('x'),
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
    });
    expect(withTools.input_tokens).toBeGreaterThan(TOKENS_PER_MESSAGE);
    expect(service.submitted).toHaveLength(0);
    const unknown = await apiError(client.messages.countTokens({ model: 'nope', messages: ask('x') }));
    expect(unknown).toBeInstanceOf(NotFoundError);
  });
});

describe('GET /v1/models with anthropic-version', () => {
  it('lists the catalogue in the Anthropic shape and pages it; leaves it to the listener without the header', async () => {
    const { client, url } = await start({ openai: "  adapter: 'ollama'\n  models: ['org/slashed']" });
    const page = await client.models.list();
    const ids = page.data.map((model) => model.id);
    expect(ids).toEqual(['pooled', 'codex', 'llama3', 'org/slashed']);
    expect(page.data[0]).toEqual({
      type: 'model',
      id: 'pooled',
      display_name: 'pooled',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const first = await client.models.list({ limit: 2 });
    expect(first.data.map((model) => model.id)).toEqual(['pooled', 'codex']);
    expect(first.has_more).toBe(true);
    expect(first.last_id).toBe('codex');
    const all: string[] = [];
    for await (const model of client.models.list({ limit: 3 })) all.push(model.id);
    expect(all).toEqual(ids);
    const before = await fetch(`${url}/v1/models?before_id=llama3&limit=1`, {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    expect(await before.json()).toMatchObject({ data: [{ id: 'codex' }], has_more: true, first_id: 'codex' });
    expect((await client.models.retrieve('org/slashed')).id).toBe('org/slashed');
    expect(await apiError(client.models.retrieve('nope'))).toBeInstanceOf(NotFoundError);
    // Without the header the listener's owner (the OpenAI app) lists it: openai-listener.test.ts.
    expect((await fetch(`${url}/v1/models`)).status).toBe(NOT_MOUNTED.status);
    const badLimit = await fetch(`${url}/v1/models?limit=0`, {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    expect(badLimit.status).toBe(400);
  });
});

describe('mount', () => {
  it('answers the HEAD / probe, records route metrics, and leaves other routes to the listener', async () => {
    const { url, finished } = await start({ openai: "  api_keys: ['test-key']" });
    const probe = await fetch(`${url}/`, { method: 'HEAD' });
    expect(probe.status).toBe(200);
    const chat = await post(
      url,
      '/v1/chat/completions',
      { model: 'pooled', messages: ask('x') },
      { authorization: 'Bearer test-key' },
    );
    expect(chat.status).toBe(NOT_MOUNTED.status);
    expect(chat.json()).toEqual({ error: { code: NOT_MOUNTED.code } });
    const beta = await post(
      url,
      '/v1/messages?beta=true',
      { model: 'pooled', max_tokens: 5, messages: ask('x') },
      { 'x-api-key': 'test-key' },
    );
    expect(beta.status).toBe(200);
    await eventually(() =>
      expect(finished).toEqual([
        { route: 'HEAD /', status: 200 },
        { route: '/v1/messages', status: 200 },
      ]),
    );
  });
});

function usageOf(promptTokens: number, completionTokens: number, cachedTokens = 0): RunEventPart {
  return { type: 'usage', usage: usage(promptTokens, completionTokens, cachedTokens) };
}
