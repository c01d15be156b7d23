// Cross-process end to end (issues 4 and 6): the official `openai` v6 client → a real edge process (serve) →
// a real `iop-node run` process → its `ollama` and `openai_compat` (vLLM) adapters → fake inference servers in
// this process → back. Covers /v1/models, chat (plain, streamed, tool calls), /v1/responses (plain, streamed),
// the upstream headers the node sends, and a client cancel mid-stream that closes the upstream connection and
// returns the provider pool (admin ListProviders) to in_flight 0 / queued 0.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import { defaultBehavior, type FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import {
  FABRIC_TOKEN,
  MODEL_LLAMA,
  MODEL_QWEN,
  OLLAMA_SERVED,
  VLLM_SERVED,
  fabricConfig,
  ollamaProviderId,
  vllmProviderId,
} from '../support/fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  waitForProvidersReady,
  stopFabric,
} from '../support/fabric-setup.js';

// Process start-up (TypeScript hooks) takes seconds on a loaded 2-core machine.
jest.setTimeout(60_000);

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;
let client: OpenAI;

async function providersIdle(): Promise<boolean> {
  const providers = await admin.listProviders();
  return providers.length === 2 && providers.every((entry) => entry.inFlight === 0 && entry.queued === 0);
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-fabric-');
  edge = await startEdgeProcess(
    group,
    dir,
    fabricConfig({
      dataDir: `${dir}/data`,
      nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
    }),
  );
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
  client = new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('openai client → edge process → node process → fake backends', () => {
  it('lists the catalogue models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining([MODEL_LLAMA, MODEL_QWEN]));
  });

  it.each([
    { model: MODEL_LLAMA, provider: ollamaProviderId('n1'), upstream: () => ollama, path: '/api/chat' },
    { model: MODEL_QWEN, provider: vllmProviderId('n1'), upstream: () => vllm, path: '/v1/chat/completions' },
  ])(
    'answers a non-streaming chat on $model through $provider',
    async ({ model, provider, upstream, path }) => {
      const before = upstream().requests.length;
      const { data, response } = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'alpha beta' }], max_tokens: 50 })
        .withResponse();
      expect(response.headers.get('x-iop-provider')).toBe(provider);
      expect(Number(response.headers.get('x-iop-overhead-ms'))).toBeGreaterThanOrEqual(0);
      expect(data.object).toBe('chat.completion');
      expect(data.model).toBe(model);
      expect(data.choices[0]?.message.content).toBe(
        defaultBehavior([]).reply({ model, prompt: 'alpha beta', tokenCount: 8 }),
      );
      expect(data.choices[0]?.finish_reason).toBe('stop');
      expect(data.usage?.completion_tokens).toBe(8);
      const seen = upstream()
        .requests.slice(before)
        .filter((request) => request.path === path);
      expect(seen).toHaveLength(1);
      // The edge rewrote the catalogue id to the provider's served model name.
      expect((seen[0]?.body as { model?: string }).model).toBe(
        model === MODEL_LLAMA ? OLLAMA_SERVED : VLLM_SERVED,
      );
    },
  );

  it.each([MODEL_LLAMA, MODEL_QWEN])('streams a chat on %s (chat.completions.stream)', async (model) => {
    // Tokens spaced in time: the node merges deltas that arrive in one burst, so an instant backend would
    // legitimately reach the client as a single chunk.
    const fake = model === MODEL_LLAMA ? ollama : vllm;
    fake.setBehavior({ tokenDelayMs: 20 });
    let deltas = 0;
    let final: Awaited<ReturnType<ReturnType<typeof client.chat.completions.stream>['finalChatCompletion']>>;
    try {
      const stream = client.chat.completions.stream({
        model,
        messages: [{ role: 'user', content: 'gamma' }],
        stream_options: { include_usage: true },
      });
      stream.on('content', () => (deltas += 1));
      final = await stream.finalChatCompletion();
    } finally {
      fake.setBehavior({ tokenDelayMs: 0 });
    }
    expect(final.choices[0]?.message.content).toBe(Array(8).fill('gamma').join(' '));
    expect(final.choices[0]?.finish_reason).toBe('stop');
    expect(deltas).toBeGreaterThanOrEqual(2);
    expect(final.usage?.completion_tokens).toBe(8);
  });

  it('sends the configured upstream headers to the openai_compat backend', () => {
    const chats = vllm.requests.filter((request) => request.path === '/v1/chat/completions');
    expect(chats.length).toBeGreaterThan(0);
    for (const request of chats) expect(request.headers.authorization).toBe('Bearer e2e-upstream-key');
  });

  it.each([MODEL_LLAMA, MODEL_QWEN])('passes tool calls back from %s', async (model) => {
    const upstream = model === MODEL_LLAMA ? ollama : vllm;
    upstream.setBehavior({
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Seoul' } }],
      tokenCount: 0,
    });
    try {
      const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ];
      const plain = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'weather?' }],
        tools,
      });
      const call = plain.choices[0]?.message.tool_calls?.[0];
      expect(plain.choices[0]?.finish_reason).toBe('tool_calls');
      expect(call?.type === 'function' && call.function.name).toBe('get_weather');
      expect(call?.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'Seoul' });

      const streamed = await client.chat.completions
        .stream({ model, messages: [{ role: 'user', content: 'weather?' }], tools })
        .finalChatCompletion();
      const streamedCall = streamed.choices[0]?.message.tool_calls?.[0];
      expect(streamed.choices[0]?.finish_reason).toBe('tool_calls');
      expect(streamedCall?.type === 'function' && JSON.parse(streamedCall.function.arguments)).toEqual({
        city: 'Seoul',
      });
      // The tool result goes back as a tool message and the conversation continues.
      upstream.setBehavior({ toolCalls: [], tokenCount: 3 });
      const followUp = await client.chat.completions.create({
        model,
        messages: [
          { role: 'user', content: 'weather?' },
          { role: 'assistant', content: null, tool_calls: call ? [call] : [] },
          { role: 'tool', tool_call_id: call?.id ?? '', content: 'sunny' },
          { role: 'user', content: 'thanks' },
        ],
        tools,
      });
      expect(followUp.choices[0]?.message.content).toBe('thanks thanks thanks');
    } finally {
      upstream.setBehavior({ toolCalls: [], tokenCount: 8 });
    }
  });

  it.each([MODEL_LLAMA, MODEL_QWEN])('answers /v1/responses on %s, plain and streamed', async (model) => {
    const plain = await client.responses.create({ model, input: 'delta epsilon' });
    expect(plain.status).toBe('completed');
    expect(plain.output_text).toBe('delta epsilon delta epsilon delta epsilon delta epsilon');

    const stream = await client.responses.create({ model, input: 'zeta', stream: true });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(text).toBe(Array(8).fill('zeta').join(' '));
  });

  it.each([
    { model: MODEL_LLAMA, upstream: () => ollama, path: '/api/chat' },
    { model: MODEL_QWEN, upstream: () => vllm, path: '/v1/chat/completions' },
  ])(
    'a client cancel mid-stream on $model closes the upstream request and frees the pool',
    async ({ model, upstream, path }) => {
      const fake = upstream();
      fake.setBehavior({ tokenCount: 400, tokenDelayMs: 15 });
      try {
        const before = fake.requests.length;
        const controller = new AbortController();
        const stream = await client.chat.completions.create(
          { model, messages: [{ role: 'user', content: 'long' }], stream: true },
          { signal: controller.signal },
        );
        let chunks = 0;
        let abortedAt = 0;
        // The v6 client ends the iteration quietly on abort (older versions threw an AbortError): accept both.
        try {
          for await (const chunk of stream) {
            if (chunk.choices[0]?.delta.content) chunks += 1;
            if (chunks === 5) {
              abortedAt = Date.now();
              controller.abort();
            }
          }
        } catch (error) {
          expect(controller.signal.aborted).toBe(true);
          expect(String(error)).toMatch(/abort/i);
        }
        expect(chunks).toBe(5);
        const upstreamRequest = () => fake.requests.slice(before).find((request) => request.path === path);
        await waitUntil(
          () => upstreamRequest()?.outcome === 'client-closed',
          5000,
          'upstream connection closed',
        );
        const closedAfterMs = (upstreamRequest()?.closedAt ?? 0) - abortedAt;
        // Edge → node cancel → adapter abort: well before the 400 × 15 ms stream would have ended.
        expect(closedAfterMs).toBeLessThan(2000);
        process.stdout.write(`[e2e] ${model}: upstream closed ${closedAfterMs} ms after the client abort\n`);
        await waitUntil(providersIdle, 5000, 'providers back to in_flight 0 / queued 0');
        expect(fake.activeRequests).toBe(0);
      } finally {
        fake.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
      }
    },
  );

  it.each([
    { model: MODEL_LLAMA, upstream: () => ollama },
    { model: MODEL_QWEN, upstream: () => vllm },
  ])('turns upstream failures on $model into well-formed OpenAI errors', async ({ model, upstream }) => {
    const fake = upstream();
    // Only generation requests fail: the node's own calls (Ollama /api/ps after runs) must not use them up.
    const paths = ['/api/chat', '/v1/chat/completions'];
    const outcomes: unknown[] = [];
    try {
      fake.setBehavior({
        failure: { kind: 'http', status: 500, message: 'backend exploded', times: 1, paths },
      });
      const httpFailure = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
      expect(httpFailure).toBeInstanceOf(OpenAI.APIError);
      const apiError = httpFailure as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(502);
      expect(apiError.message).toContain('backend exploded');
      outcomes.push({ status: apiError.status, code: apiError.code, type: apiError.type });

      fake.setBehavior({
        failure: { kind: 'mid-stream', afterTokens: 3, message: 'gpu fell over', times: 1, paths },
      });
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      let text = '';
      const midStream = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })().catch((error: unknown) => error);
      // The client saw the first tokens, then the SSE error object.
      expect(text.length).toBeGreaterThan(0);
      expect(midStream).toBeInstanceOf(OpenAI.APIError);
      expect(String((midStream as Error).message)).toContain('gpu fell over');

      // A non-streaming request gets one JSON answer from the backend (RunRequest.collect), so the drop comes
      // before the response headers, where a reset on a reused keep-alive socket is taken for a stale pooled
      // socket and sent once more on another connection: both attempts are dropped here.
      fake.setBehavior({ failure: { kind: 'drop', afterTokens: 2, times: 2, paths } });
      const dropped = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
      expect(dropped).toBeInstanceOf(OpenAI.APIError);
      expect((dropped as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      outcomes.push({ status: (dropped as InstanceType<typeof OpenAI.APIError>).status });
    } finally {
      fake.setBehavior({ failure: undefined });
    }
    process.stdout.write(`[e2e] ${model} upstream failures → ${JSON.stringify(outcomes)}\n`);
    // The backend healed: the next request succeeds and nothing stayed in flight.
    const healed = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'ok' }],
    });
    expect(healed.choices[0]?.message.content).toContain('ok');
    await waitUntil(providersIdle, 5000, 'providers idle after failures');
  });

  it('leaves every provider ready with nothing in flight or queued', async () => {
    const providers = await admin.listProviders();
    expect(providers.map((entry) => entry.providerId).sort()).toEqual([
      ollamaProviderId('n1'),
      vllmProviderId('n1'),
    ]);
    for (const entry of providers) {
      expect(entry).toMatchObject({ nodeId: 'n1', status: 'ready', inFlight: 0, queued: 0, capacity: 4 });
    }
    expect(node.running).toBe(true);
  });

  it('never logs the node token or the upstream API key', () => {
    for (const output of [edge.stdout(), edge.stderr(), node.stdout(), node.stderr()]) {
      expect(output).not.toContain(FABRIC_TOKEN);
      expect(output).not.toContain('e2e-upstream-key');
    }
    // The logs were there to look at (JSON records from both processes).
    expect(edge.logRecords().length).toBeGreaterThan(5);
    expect(node.logRecords().length).toBeGreaterThan(2);
  });
});
