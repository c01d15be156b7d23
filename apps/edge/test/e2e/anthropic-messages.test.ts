// Cross-process end to end (issue 31): the official @anthropic-ai/sdk against a real edge process and a real
// node process whose backends are the testkit's fake Ollama and fake vLLM, which record what they received. Covers
// messages.create, messages.stream with system blocks, a tool_use round trip, countTokens, an unknown model, the
// 429 path, and usage / metrics recorded under surface `anthropic`.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { APIError } from '@anthropic-ai/sdk';
import Anthropic, { NotFoundError, RateLimitError } from '@anthropic-ai/sdk';
import type { FakeServer, RecordedRequest } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  metricSum,
  scrapeMetrics,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import {
  MODEL_LLAMA,
  MODEL_QWEN,
  OLLAMA_SERVED,
  VLLM_SERVED,
  fabricConfig,
} from '../support/fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  waitForProvidersReady,
  stopFabric,
} from '../support/fabric-setup.js';

jest.setTimeout(90_000);

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let admin: AdminClient;
let client: Anthropic;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends({ tokenCount: 3 }));
  const dir = await group.tempDir('iop-e2e-anthropic-');
  // One slot and one queue place per provider, so the 429 case needs only three concurrent requests.
  const config = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 1, maxQueue: 1 }],
  });
  // The Anthropic models list shows a models[] display_name.
  (config['models'] as Record<string, unknown>[])[0] = {
    ...(config['models'] as Record<string, unknown>[])[0],
    display_name: 'E2E Llama',
  };
  edge = await startEdgeProcess(group, dir, config);
  await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => edge.describe());
  client = new Anthropic({
    baseURL: edge.addresses.openai,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 20_000,
  });
}, 120_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

/** The last generation request a fake received. */
function lastChat(server: FakeServer, path: string): Record<string, unknown> {
  const requests: RecordedRequest[] = server.requests.filter((request) => request.path === path);
  return (requests[requests.length - 1]?.body ?? {}) as Record<string, unknown>;
}

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('the Anthropic Messages API through edge and node', () => {
  it('messages.create on an Ollama model: text, usage, end_turn; the backend gets the mapped options', async () => {
    const body: Anthropic.MessageCreateParamsNonStreaming & { temperature: number; top_k: number } = {
      model: MODEL_LLAMA,
      max_tokens: 64,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hello anthropic' }],
      stop_sequences: ['END'],
      temperature: 0.2,
      top_k: 30,
    };
    const message = await client.messages.create(body);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL_LLAMA,
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'hello anthropic hello' }],
    });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBe(3);
    const sent = lastChat(ollama, '/api/chat');
    expect(sent).toMatchObject({
      model: OLLAMA_SERVED,
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello anthropic' },
      ],
      options: { num_predict: 64, temperature: 0.2, top_k: 30, stop: ['END'] },
    });
  });

  it('messages.stream with system blocks on a vLLM model: every event type, in order', async () => {
    const stream = client.messages.stream({
      model: MODEL_QWEN,
      max_tokens: 32,
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in English.' },
      ],
      messages: [{ role: 'user', content: 'stream this please' }],
    });
    const events: string[] = [];
    stream.on('streamEvent', (event) => {
      events.push(event.type === 'content_block_delta' ? `delta:${event.delta.type}` : event.type);
    });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'stream this please' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(3);
    expect(events[0]).toBe('message_start');
    expect(events[1]).toBe('content_block_start');
    expect(events.filter((event) => event === 'delta:text_delta').length).toBeGreaterThanOrEqual(1);
    expect(events.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    const sent = lastChat(vllm, '/v1/chat/completions');
    expect(sent).toMatchObject({
      model: VLLM_SERVED,
      stream: true,
      max_tokens: 32,
      messages: [
        { role: 'system', content: 'You are terse.\n\nAnswer in English.' },
        { role: 'user', content: 'stream this please' },
      ],
    });
    // The raw stream carries the ping the SDK hides.
    const raw = await fetch(`${edge.addresses.openai}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: MODEL_QWEN,
        max_tokens: 8,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(raw.headers.get('content-type')).toBe('text/event-stream');
    const names = [...(await raw.text()).matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
  });

  for (const [label, model, backend, path] of [
    ['vLLM', MODEL_QWEN, () => vllm, '/v1/chat/completions'],
    ['Ollama', MODEL_LLAMA, () => ollama, '/api/chat'],
  ] as const) {
    it(`a tool_use round trip on ${label}: the backend receives the tool call and the tool_result`, async () => {
      const server = backend();
      server.setBehavior({
        toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Paris' } }],
      });
      const question: Anthropic.MessageParam = { role: 'user', content: 'weather in Paris?' };
      const first = await client.messages
        .stream({ model, max_tokens: 64, tools: [weatherTool], messages: [question] })
        .finalMessage();
      server.setBehavior({ toolCalls: [] });
      expect(first.stop_reason).toBe('tool_use');
      const call = first.content.find((block) => block.type === 'tool_use');
      expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
      const firstSent = lastChat(server, path);
      expect(firstSent['tools']).toEqual([
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather of a city',
            parameters: weatherTool.input_schema,
          },
        },
      ]);
      const callId = (call as Anthropic.ToolUseBlock).id;
      const second = await client.messages.create({
        model,
        max_tokens: 64,
        tools: [weatherTool],
        messages: [
          question,
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: callId, content: 'sunny 21C' }] },
        ],
      });
      expect(second.stop_reason).toBe('end_turn');
      const sent = lastChat(server, path)['messages'] as Record<string, unknown>[];
      expect(sent.map((message) => message['role'])).toEqual(['user', 'assistant', 'tool']);
      expect(sent[2]).toMatchObject({ role: 'tool', content: 'sunny 21C' });
      if (label === 'vLLM') {
        expect(sent[1]).toMatchObject({
          tool_calls: [{ id: callId, type: 'function', function: { name: 'get_weather' } }],
        });
        expect(
          JSON.parse(
            String((sent[1]?.['tool_calls'] as { function: { arguments: string } }[])[0]?.function.arguments),
          ),
        ).toEqual({ city: 'Paris' });
        expect(sent[2]).toMatchObject({ tool_call_id: callId });
      } else {
        expect(sent[1]).toMatchObject({
          tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
        });
      }
    });
  }

  it('countTokens estimates without a backend request; an unknown model is 404 not_found_error', async () => {
    // Generation requests only: the node asks Ollama's /api/ps on its own (loaded models).
    const generations = () =>
      ollama.requests.filter((request) => request.path !== '/api/ps').length + vllm.requests.length;
    const before = generations();
    const counted = await client.messages.countTokens({
      model: MODEL_LLAMA,
      system: 'system prompt',
      messages: [{ role: 'user', content: 'count these words for me' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(generations()).toBe(before);
    const error = await client.messages
      .create({ model: 'no-such-model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as APIError).type).toBe('not_found_error');
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual([MODEL_LLAMA, MODEL_QWEN]);
    expect(models.data[0]).toMatchObject({ type: 'model', id: MODEL_LLAMA, display_name: 'E2E Llama' });
    expect(models.data[1]).toMatchObject({ type: 'model', id: MODEL_QWEN, display_name: MODEL_QWEN });
  });

  it('429 rate_limit_error with retry-after once the one slot and queue place are taken', async () => {
    ollama.setBehavior({ tokenDelayMs: 150, tokenCount: 6 });
    try {
      const results = await Promise.all(
        Array.from({ length: 3 }, () =>
          client.messages
            .create({ model: MODEL_LLAMA, max_tokens: 16, messages: [{ role: 'user', content: 'slow one' }] })
            .withResponse()
            .then(
              () => 'ok',
              (error: unknown) => error,
            ),
        ),
      );
      expect(results.filter((result) => result === 'ok')).toHaveLength(2);
      const refused = results.find((result) => result instanceof RateLimitError) as RateLimitError;
      expect(refused).toBeInstanceOf(RateLimitError);
      expect(refused.type).toBe('rate_limit_error');
      expect(refused.headers?.get('retry-after')).toBe('1');
    } finally {
      ollama.setBehavior({ tokenDelayMs: 0, tokenCount: 3 });
    }
  });

  it('records usage and metrics under surface anthropic, and leaves nothing in flight', async () => {
    await waitUntil(
      async () => {
        const groups = await admin.getUsage({ by: 'surface', sinceUnixMs: 0 });
        return (groups.find((entry) => entry.group === 'anthropic')?.runs ?? 0) >= 8;
      },
      10_000,
      async () => `usage: ${JSON.stringify(await admin.getUsage({ by: 'surface', sinceUnixMs: 0 }))}`,
    );
    const samples = await scrapeMetrics(edge.addresses.metrics);
    expect(
      metricSum(samples, 'iop_http_requests_total', {
        surface: 'anthropic',
        route: '/v1/messages',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(8);
    expect(
      metricSum(samples, 'iop_http_requests_total', {
        surface: 'anthropic',
        route: '/v1/messages',
        status: '429',
      }),
    ).toBe(1);
    // Admitted by the service's one admission path, counted under this surface.
    expect(metricSum(samples, 'iop_runs_admitted_total', { surface: 'anthropic' })).toBeGreaterThanOrEqual(8);
    await waitUntil(
      async () => (await admin.listProviders()).every((entry) => entry.inFlight === 0 && entry.queued === 0),
      10_000,
      () => 'providers idle',
    );
  });
});
