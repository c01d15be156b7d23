// The openai_compat adapter against the fake vLLM server from @iop/testkit (in-process, real HTTP).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startFakeOpenAI, type FakeBehavior, type FakeServer } from '@iop/testkit';
import { create, isTerminalPart, type RunEventPart, type RunRequest } from '@iop/wire';

import type { Adapter } from '../adapter.js';
import {
  closedPortUrl,
  collect,
  edgeView,
  httpInstance,
  terminalOf,
  testDeps,
  textOf,
  userRun,
} from '../http/test-support/http-adapter-fixtures.js';
import { createOpenAICompatAdapter } from './openai-compat-adapter.js';

const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const never = new AbortController().signal;

describe('openai_compat adapter', () => {
  let server: FakeServer;
  let adapter: Adapter;

  beforeEach(async () => {
    server = await startFakeOpenAI();
    adapter = createOpenAICompatAdapter(
      httpInstance('openai_compat', 'vllm-a', {
        provider: 'vllm',
        baseUrl: server.url,
        headers: { authorization: 'Bearer vllm-key', 'x-tenant': 'iop' },
        requestTimeoutMs: 2000,
      }),
      testDeps(),
    );
  });
  afterEach(async () => {
    await adapter.close();
    await server.close();
  });

  it('streams text deltas, usage and one complete part', async () => {
    server.setBehavior({ tokenCount: 3 });
    const parts = await collect(adapter.run(userRun(MODEL, 'hi there'), { signal: never }));
    expect(parts[0]).toEqual({ type: 'start', sessionId: 'session-1', adapter: 'vllm-a', target: MODEL });
    // Deltas that arrive in one upstream read leave as one part: the text is what counts.
    expect(
      parts
        .filter((part) => part.type === 'text-delta')
        .map((part) => part.text)
        .join(''),
    ).toBe('hi there hi');
    expect(parts.find((part) => part.type === 'usage')).toEqual({
      type: 'usage',
      usage: create.usage({ promptTokens: 2, completionTokens: 3, totalTokens: 5 }),
    });
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', detail: 'stop', finishReason: 'stop' });
    expect(parts.filter(isTerminalPart)).toHaveLength(1);
  });

  it('sends headers and the mapped body to /v1/chat/completions, streaming unless the run is collected', async () => {
    await collect(
      adapter.run(
        userRun(MODEL, 'x', {
          params: create.generationParams({ maxTokens: 5, temperature: 0.1, think: true }),
        }),
        {
          signal: never,
        },
      ),
    );
    const recorded = server.requests[0];
    expect(recorded.path).toBe('/v1/chat/completions');
    expect(recorded.headers.authorization).toBe('Bearer vllm-key');
    expect(recorded.headers['x-tenant']).toBe('iop');
    expect(recorded.headers.accept).toBe('text/event-stream');
    expect(recorded.body).toMatchObject({
      model: MODEL,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 5,
      temperature: 0.1,
      chat_template_kwargs: { enable_thinking: true },
    });
  });

  it('accepts a base_url that already ends in /v1', async () => {
    const withV1 = createOpenAICompatAdapter(
      httpInstance('openai_compat', 'v1', { baseUrl: `${server.url}/v1/` }),
      testDeps(),
    );
    const parts = await collect(withV1.run(userRun(MODEL, 'x'), { signal: never }));
    expect(terminalOf(parts).type).toBe('complete');
    expect(server.requests[0].path).toBe('/v1/chat/completions');
    await withV1.close();
  });

  it('emits reasoning_content as reasoning deltas', async () => {
    server.setBehavior({ reasoning: 'consider options', tokenCount: 1 });
    const parts = await collect(adapter.run(userRun(MODEL, 'go'), { signal: never }));
    expect(textOf(parts, 'reasoning-delta')).toBe('consider options');
    expect(textOf(parts)).toBe('go');
  });

  it('assembles tool-call deltas split across chunks into one part per call', async () => {
    server.setBehavior({
      tokenCount: 0,
      toolCalls: [
        { id: 'call_w', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
        { id: 'call_t', name: 'get_time', arguments: { zone: 'CET' } },
      ],
    });
    const parts = await collect(
      adapter.run(
        userRun(MODEL, 'x', { tools: [{ name: 'get_weather', description: '', parametersJson: '{}' }] }),
        {
          signal: never,
        },
      ),
    );
    expect(parts.filter((part) => part.type === 'tool-call').map((part) => part.call)).toEqual([
      create.toolCall({
        id: 'call_w',
        name: 'get_weather',
        argumentsJson: '{"city":"Paris","unit":"celsius"}',
        index: 0,
      }),
      create.toolCall({ id: 'call_t', name: 'get_time', argumentsJson: '{"zone":"CET"}', index: 1 }),
    ]);
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', finishReason: 'tool_calls' });
  });

  it('reports finish reason length at max_tokens', async () => {
    const parts = await collect(
      adapter.run(userRun(MODEL, 'a b c', { params: create.generationParams({ maxTokens: 2 }) }), {
        signal: never,
      }),
    );
    expect(textOf(parts)).toBe('a b');
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', finishReason: 'length' });
  });

  it('measures backendMs as the time spent waiting on the upstream', async () => {
    server.setBehavior({ firstTokenDelayMs: 60, tokenDelayMs: 10, tokenCount: 3 });
    const complete = terminalOf(await collect(adapter.run(userRun(MODEL, 'x'), { signal: never })));
    expect(complete.type).toBe('complete');
    expect((complete as { backendMs: number }).backendMs).toBeGreaterThanOrEqual(75);
  });

  it('handles a server that ignores stream:true and answers one JSON completion', async () => {
    // A fetch that drops `stream` on the way out, like servers without streaming support.
    const nonStreaming = ((input: string | URL | Request, init?: RequestInit) => {
      const body = JSON.parse(init?.body as string) as Record<string, unknown>;
      delete body.stream;
      delete body.stream_options;
      return globalThis.fetch(input, { ...init, body: JSON.stringify(body) });
    }) as typeof fetch;
    const plain = createOpenAICompatAdapter(
      httpInstance('openai_compat', 'plain', { baseUrl: server.url }),
      testDeps({ fetch: nonStreaming }),
    );
    server.setBehavior({
      reasoning: 'thinking',
      tokenCount: 2,
      toolCalls: [{ id: 'call_z', name: 'f', arguments: { a: 1 } }],
    });
    const parts = await collect(plain.run(userRun(MODEL, 'p q'), { signal: never }));
    expect(textOf(parts, 'reasoning-delta')).toBe('thinking');
    expect(textOf(parts)).toBe('p q');
    expect(parts.find((part) => part.type === 'tool-call')).toEqual({
      type: 'tool-call',
      call: create.toolCall({ id: 'call_z', name: 'f', argumentsJson: '{"a":1}', index: 0 }),
    });
    expect(parts.find((part) => part.type === 'usage')).toMatchObject({ usage: { completionTokens: 4 } });
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', finishReason: 'tool_calls' });
    await plain.close();
  });

  describe('a collected run (RunRequest.collect: the caller wants the whole answer)', () => {
    async function bothWays(run: RunRequest): Promise<[unknown[], unknown[]]> {
      const streamed = await collect(adapter.run(run, { signal: never }));
      const collected = await collect(adapter.run({ ...run, collect: true }, { signal: never }));
      return [edgeView(streamed), edgeView(collected)];
    }

    it('asks for the whole answer as JSON: stream false, no stream_options, accept application/json', async () => {
      await collect(
        adapter.run(userRun(MODEL, 'x', { collect: true, traceparent: 'ignored-by-the-adapter' }), {
          signal: never,
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        }),
      );
      const recorded = server.requests[0];
      expect(recorded.headers.accept).toBe('application/json');
      expect(recorded.headers.authorization).toBe('Bearer vllm-key');
      expect(recorded.headers.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
      expect(recorded.body).toMatchObject({ model: MODEL, stream: false });
      expect(recorded.body).not.toHaveProperty('stream_options');
    });

    const answers: [string, Partial<FakeBehavior>, string, Partial<RunRequest>][] = [
      ['text and usage', { tokenCount: 5 }, 'one two three four five six', {}],
      ['reasoning then text', { reasoning: 'think about it', tokenCount: 3 }, 'a b c d', {}],
      ['finish reason length', {}, 'a b c d e', { params: create.generationParams({ maxTokens: 2 }) }],
      [
        'tool calls',
        {
          tokenCount: 1,
          toolCalls: [
            { id: 'call_a', name: 'f', arguments: { a: 1 } },
            { id: 'call_b', name: 'g', arguments: { b: [2, 3] } },
          ],
        },
        'use tools',
        {},
      ],
    ];
    it.each(answers)(
      'gives the edge the same parts as the streamed run: %s',
      async (name, behavior, prompt, fields) => {
        server.setBehavior(behavior);
        const [streamed, collected] = await bothWays(userRun(MODEL, prompt, fields));
        expect(collected).toEqual(streamed);
        expect(JSON.stringify(streamed)).toContain(name.includes('length') ? '"length"' : '"usage"');
        expect(server.requests.map((request) => (request.body as { stream: boolean }).stream)).toEqual([
          true,
          false,
        ]);
      },
    );

    it('maps an HTTP error body as a streamed run does', async () => {
      const [streamed, collected] = await bothWays(userRun('ghost', 'x'));
      expect(collected).toEqual(streamed);
      expect(collected[collected.length - 1]).toMatchObject({ type: 'error', code: 'upstream_http_404' });
    });

    it('maps a backend failure during the generation (an HTTP 500) to upstream_http_500', async () => {
      server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 1, message: 'engine dead' } });
      const parts = await collect(adapter.run(userRun(MODEL, 'x y', { collect: true }), { signal: never }));
      expect(parts.some((part) => part.type === 'text-delta')).toBe(false);
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_http_500',
        message: 'engine dead',
        retryable: true,
      });
    });

    it('times out when the whole answer takes longer than request_timeout_ms', async () => {
      const quick = createOpenAICompatAdapter(
        httpInstance('openai_compat', 'quick', { baseUrl: server.url, requestTimeoutMs: 120 }),
        testDeps(),
      );
      // Tokens every 50 ms keep a streamed run alive; the whole answer (about 500 ms) is one silent wait.
      server.setBehavior({ tokenCount: 10, tokenDelayMs: 50 });
      const parts = await collect(quick.run(userRun(MODEL, 'x', { collect: true }), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'upstream_timeout' });
      await server.waitForIdle(200);
      await quick.close();
    });

    it('aborts the upstream request within 100 ms of a cancel while the backend generates', async () => {
      server.setBehavior({ tokenCount: 200, tokenDelayMs: 20 });
      const controller = new AbortController();
      const running = collect(
        adapter.run(userRun(MODEL, 'x', { collect: true }), { signal: controller.signal }),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      const abortedAt = Date.now();
      controller.abort('client went away');
      const parts = await running;
      expect(terminalOf(parts)).toEqual({ type: 'cancelled', reason: 'client went away' });
      await server.waitForIdle(100);
      expect(server.requests[0].outcome).toBe('client-closed');
      expect(server.requests[0].closedAt! - abortedAt).toBeLessThan(100);
    });
  });

  describe('errors', () => {
    it('maps a 404 vLLM error body to upstream_http_404 with its message', async () => {
      const parts = await collect(adapter.run(userRun('ghost', 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_http_404',
        message: 'The model `ghost` does not exist.',
        retryable: false,
      });
    });

    it('maps 401 and 503 with retryability', async () => {
      server.setBehavior({ failure: { kind: 'http', status: 401, message: 'bad key', times: 1 } });
      expect(terminalOf(await collect(adapter.run(userRun(MODEL, 'x'), { signal: never })))).toMatchObject({
        code: 'upstream_http_401',
        message: 'bad key',
        retryable: false,
      });
      server.setBehavior({ failure: { kind: 'http', status: 503, message: 'overloaded', times: 1 } });
      expect(terminalOf(await collect(adapter.run(userRun(MODEL, 'x'), { signal: never })))).toMatchObject({
        code: 'upstream_http_503',
        retryable: true,
      });
    });

    it('maps a mid-stream error event to upstream_error after the streamed text', async () => {
      server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 1, message: 'engine dead' } });
      const parts = await collect(adapter.run(userRun(MODEL, 'x y'), { signal: never }));
      expect(textOf(parts)).toBe('x');
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_error',
        message: 'engine dead',
      });
    });

    it('maps a dropped connection to upstream_error', async () => {
      server.setBehavior({ failure: { kind: 'drop', afterTokens: 2 } });
      const parts = await collect(adapter.run(userRun(MODEL, 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'upstream_error' });
    });

    it('maps a stall to upstream_timeout', async () => {
      const quick = createOpenAICompatAdapter(
        httpInstance('openai_compat', 'quick', { baseUrl: server.url, requestTimeoutMs: 120 }),
        testDeps(),
      );
      server.setBehavior({ failure: { kind: 'stall', afterTokens: 1 } });
      const parts = await collect(quick.run(userRun(MODEL, 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'upstream_timeout' });
      await server.waitForIdle(200);
      await quick.close();
    });

    it('maps a refused connection to upstream_unreachable', async () => {
      const dead = createOpenAICompatAdapter(
        httpInstance('openai_compat', 'dead', { baseUrl: await closedPortUrl() }),
        testDeps(),
      );
      const parts = await collect(dead.run(userRun(MODEL, 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_unreachable',
        retryable: true,
      });
    });
  });

  it('aborts the upstream request within 100 ms of a cancel', async () => {
    server.setBehavior({ tokenCount: 200, tokenDelayMs: 20 });
    const controller = new AbortController();
    const parts: RunEventPart[] = [];
    let abortedAt = 0;
    for await (const part of adapter.run(userRun(MODEL, 'x'), { signal: controller.signal })) {
      parts.push(part);
      if (part.type === 'text-delta' && abortedAt === 0) {
        abortedAt = Date.now();
        controller.abort('client went away');
      }
    }
    expect(terminalOf(parts)).toEqual({ type: 'cancelled', reason: 'client went away' });
    await server.waitForIdle(100);
    expect(server.requests[0].outcome).toBe('client-closed');
    expect(server.requests[0].closedAt! - abortedAt).toBeLessThan(100);
  });

  describe('commands and health', () => {
    const command = (name: string) =>
      create.nodeCommandRequest({ command: name, adapter: 'vllm-a', providerId: 'vllm-gpu' });

    it('lists served models from /v1/models with the configured headers', async () => {
      const response = await adapter.command(command('list_models'), { signal: never });
      expect(response).toMatchObject({
        ok: true,
        result: { models: MODEL, count: '1', max_model_len: `${MODEL}=32768` },
        lifecycle: {
          providerId: 'vllm-gpu',
          action: 'list_models',
          status: 'ok',
          models: [{ name: MODEL, loaded: true }],
        },
      });
      expect(server.requests[0].headers.authorization).toBe('Bearer vllm-key');
    });

    it('answers capabilities and rejects lifecycle commands it cannot do', async () => {
      await adapter.command(command('list_models'), { signal: never });
      const caps = await adapter.command(command('capabilities'), { signal: never });
      expect(caps.result).toEqual({
        adapter: 'openai_compat',
        targets: MODEL,
        base_url: server.url,
        provider: 'vllm',
      });
      for (const name of ['pull_model', 'load_model', 'unload_model', 'bogus']) {
        const response = await adapter.command(command(name), { signal: never });
        expect(response).toMatchObject({
          ok: false,
          error: `command ${name} not supported by adapter openai_compat`,
        });
      }
    });

    it('tracks health: healthy → unreachable → unhealthy (HTTP 500) → healthy', async () => {
      expect(await adapter.probeHealth(never)).toEqual({
        health: 'healthy',
        detail: '1 model(s) served',
        models: [MODEL],
      });
      const port = Number(new URL(server.url).port);
      await server.close();
      expect(await adapter.probeHealth(never)).toMatchObject({
        health: 'unreachable',
        cause: 'connection_refused',
      });
      server = await startFakeOpenAI({ port });
      server.setBehavior({ failure: { kind: 'http', status: 500, message: 'engine starting' } });
      expect(await adapter.probeHealth(never)).toEqual({
        health: 'unhealthy',
        detail: 'HTTP 500: engine starting',
        cause: 'http_status',
        models: [],
      });
      server.setBehavior({ failure: undefined });
      expect((await adapter.probeHealth(never)).health).toBe('healthy');
    });

    it('reports an answer without a model list as unhealthy', async () => {
      const wrong = createOpenAICompatAdapter(
        httpInstance('openai_compat', 'wrong', { baseUrl: `${server.url}/health-check-root` }),
        testDeps(),
      );
      const result = await wrong.probeHealth(never);
      expect(result.health).toBe('unhealthy');
      await wrong.close();
    });
  });

  it('runs several named instances side by side', async () => {
    const other = await startFakeOpenAI({
      behavior: { models: ['Qwen/Qwen3-8B'], reply: () => 'qwen says hi' },
    });
    try {
      const second = createOpenAICompatAdapter(
        httpInstance('openai_compat', 'vllm-b', { provider: 'vllm', baseUrl: other.url }),
        testDeps(),
      );
      const [a, b] = await Promise.all([
        collect(adapter.run(userRun(MODEL, 'alpha'), { signal: never })),
        collect(second.run(userRun('Qwen/Qwen3-8B', 'x'), { signal: never })),
      ]);
      expect(a[0]).toMatchObject({ adapter: 'vllm-a' });
      expect(b[0]).toMatchObject({ adapter: 'vllm-b' });
      expect(textOf(b)).toBe('qwen says hi');
      expect(other.requests[0].headers.authorization).toBeUndefined();
      await second.close();
    } finally {
      await other.close();
    }
  });
});
