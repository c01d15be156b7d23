// The ollama adapter against the fake Ollama from @iop/testkit (in-process, real HTTP on 127.0.0.1).
import { ManualClock } from '@iop/clock';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startFakeOllama, type FakeBehavior, type FakeServer } from '@iop/testkit';
import {
  create,
  isTerminalPart,
  type ProviderLifecycleProgress,
  type RunEventPart,
  type RunRequest,
} from '@iop/wire';

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
import { createOllamaAdapter } from './ollama-adapter.js';

const never = new AbortController().signal;

describe('ollama adapter', () => {
  let server: FakeServer;
  let adapter: Adapter;

  beforeEach(async () => {
    server = await startFakeOllama();
    adapter = createOllamaAdapter(
      httpInstance('ollama', 'ollama-a', {
        baseUrl: `${server.url}/`,
        headers: { authorization: 'Bearer secret-token' },
        requestTimeoutMs: 2000,
        contextSize: 8192,
      }),
      testDeps(),
    );
  });
  afterEach(async () => {
    await adapter.close();
    await server.close();
  });

  it('streams start, text deltas, usage and one complete part', async () => {
    server.setBehavior({ tokenCount: 4 });
    const parts = await collect(adapter.run(userRun('llama3.2', 'hello world'), { signal: never }));
    expect(parts[0]).toEqual({
      type: 'start',
      sessionId: 'session-1',
      adapter: 'ollama-a',
      target: 'llama3.2',
    });
    expect(parts.filter((part) => part.type === 'text-delta').map((part) => part.text)).toEqual([
      'hello',
      ' world',
      ' hello',
      ' world',
    ]);
    expect(parts.find((part) => part.type === 'usage')).toEqual({
      type: 'usage',
      usage: create.usage({ promptTokens: 2, completionTokens: 4, totalTokens: 6 }),
    });
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', detail: 'stop', finishReason: 'stop' });
    expect(parts.filter(isTerminalPart)).toHaveLength(1);
  });

  it('sends the mapped request with configured headers, streaming unless the run is collected', async () => {
    await collect(
      adapter.run(
        userRun('llama3.2', 'x', {
          params: create.generationParams({ maxTokens: 3, temperature: 0, stop: ['.'] }),
        }),
        { signal: never },
      ),
    );
    const recorded = server.requests[0];
    expect(recorded.path).toBe('/api/chat');
    expect(recorded.headers.authorization).toBe('Bearer secret-token');
    expect(recorded.body).toMatchObject({
      model: 'llama3.2',
      stream: true,
      options: { num_predict: 3, temperature: 0, stop: ['.'], num_ctx: 8192 },
    });
  });

  it('reports finish reason length when num_predict cuts the reply', async () => {
    const parts = await collect(
      adapter.run(userRun('llama3.2', 'a b c d', { params: create.generationParams({ maxTokens: 2 }) }), {
        signal: never,
      }),
    );
    expect(textOf(parts)).toBe('a b');
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', finishReason: 'length' });
  });

  it('emits thinking as reasoning deltas when think is requested', async () => {
    server.setBehavior({ reasoning: 'step one step two', tokenCount: 1 });
    const parts = await collect(
      adapter.run(userRun('qwen3:8b', 'go', { params: create.generationParams({ think: true }) }), {
        signal: never,
      }),
    );
    expect(textOf(parts, 'reasoning-delta')).toBe('step one step two');
    expect(textOf(parts)).toBe('go');
    const firstText = parts.findIndex((part) => part.type === 'text-delta');
    const lastReasoning = parts.map((part) => part.type).lastIndexOf('reasoning-delta');
    expect(lastReasoning).toBeLessThan(firstText);
  });

  it('emits one assembled tool-call part per call and finish reason tool_calls', async () => {
    server.setBehavior({
      tokenCount: 0,
      toolCalls: [
        { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' } },
        { name: 'get_time', arguments: {} },
      ],
    });
    const parts = await collect(
      adapter.run(
        userRun('llama3.2', 'weather', {
          tools: [{ name: 'get_weather', description: 'w', parametersJson: '{"type":"object"}' }],
        }),
        { signal: never },
      ),
    );
    const calls = parts.filter((part) => part.type === 'tool-call').map((part) => part.call);
    expect(calls).toEqual([
      create.toolCall({ id: 'call_a', name: 'get_weather', argumentsJson: '{"city":"Paris"}', index: 0 }),
      create.toolCall({
        id: expect.any(String) as unknown as string,
        name: 'get_time',
        argumentsJson: '{}',
        index: 1,
      }),
    ]);
    expect(terminalOf(parts)).toMatchObject({ type: 'complete', finishReason: 'tool_calls' });
    expect(server.requests[0].body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    });
  });

  it('measures backendMs as the time spent waiting on the upstream', async () => {
    server.setBehavior({ firstTokenDelayMs: 80, tokenCount: 2 });
    const parts = await collect(adapter.run(userRun('llama3.2', 'x'), { signal: never }));
    const complete = terminalOf(parts);
    if (complete.type !== 'complete') throw new Error(`expected complete, got ${complete.type}`);
    expect(complete.backendMs).toBeGreaterThanOrEqual(75);
    expect(complete.backendMs).toBeLessThan(1000);
  });

  describe('a collected run (RunRequest.collect)', () => {
    it('asks for one JSON body (stream false)', async () => {
      await collect(adapter.run(userRun('llama3.2', 'x', { collect: true }), { signal: never }));
      expect(server.requests[0].body).toMatchObject({ model: 'llama3.2', stream: false });
      expect(server.requests[0].headers.accept).toBe('application/json');
    });

    const answers: [string, Partial<FakeBehavior>, Partial<RunRequest>][] = [
      ['text and usage', { tokenCount: 4 }, {}],
      [
        'thinking then text',
        { reasoning: 'let me think', tokenCount: 2 },
        {
          params: create.generationParams({ think: true }),
        },
      ],
      ['finish reason length', { tokenCount: 4 }, { params: create.generationParams({ maxTokens: 2 }) }],
      [
        'tool calls',
        { tokenCount: 1, toolCalls: [{ id: 'call_a', name: 'f', arguments: { a: 1 } }] },
        { tools: [{ name: 'f', description: '', parametersJson: '{"type":"object"}' }] },
      ],
    ];
    it.each(answers)(
      'gives the edge the same parts as the streamed run: %s',
      async (_name, behavior, fields) => {
        server.setBehavior(behavior);
        const run = userRun('llama3.2', 'one two three', fields);
        const streamed = edgeView(await collect(adapter.run(run, { signal: never })));
        const collected = edgeView(await collect(adapter.run({ ...run, collect: true }, { signal: never })));
        expect(collected).toEqual(streamed);
        expect(
          terminalOf(await collect(adapter.run({ ...run, collect: true }, { signal: never }))).type,
        ).toBe('complete');
      },
    );

    it('maps an HTTP error as a streamed run does', async () => {
      server.setBehavior({ failure: { kind: 'http', status: 500, message: 'boom', times: 2 } });
      const streamed = edgeView(await collect(adapter.run(userRun('llama3.2', 'x'), { signal: never })));
      const run = userRun('llama3.2', 'x', { collect: true });
      const collected = edgeView(await collect(adapter.run(run, { signal: never })));
      expect(collected).toEqual(streamed);
      expect(collected[collected.length - 1]).toMatchObject({ type: 'error', code: 'upstream_http_500' });
    });
  });

  describe('errors', () => {
    it('turns an HTTP 404 into upstream_http_404 with the upstream message', async () => {
      const parts = await collect(adapter.run(userRun('ghost', 'x'), { signal: never }));
      expect(parts[0].type).toBe('start');
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_http_404',
        message: "model 'ghost' not found",
        retryable: false,
      });
      expect(parts).toHaveLength(2);
    });

    it('turns an HTTP 500 into a retryable upstream_http_500', async () => {
      server.setBehavior({ failure: { kind: 'http', status: 500, message: 'out of memory' } });
      const parts = await collect(adapter.run(userRun('llama3.2', 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_http_500',
        message: 'out of memory',
        retryable: true,
      });
    });

    it('turns a mid-stream {"error"} line into upstream_error after the streamed text', async () => {
      server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 2, message: 'CUDA error' } });
      const parts = await collect(adapter.run(userRun('llama3.2', 'a b c'), { signal: never }));
      expect(textOf(parts)).toBe('a b');
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_error',
        message: 'CUDA error',
        retryable: false,
      });
    });

    it('reports a dropped connection as upstream_error', async () => {
      server.setBehavior({ failure: { kind: 'drop', afterTokens: 1 } });
      const parts = await collect(adapter.run(userRun('llama3.2', 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'upstream_error' });
      expect((terminalOf(parts) as { message: string }).message).toMatch(/connection lost/);
    });

    it('reports a stalled stream as upstream_timeout after request_timeout_ms', async () => {
      const quick = createOllamaAdapter(
        httpInstance('ollama', 'quick', { baseUrl: server.url, requestTimeoutMs: 150 }),
        testDeps(),
      );
      server.setBehavior({ failure: { kind: 'stall', afterTokens: 1 } });
      const started = Date.now();
      const parts = await collect(quick.run(userRun('llama3.2', 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'upstream_timeout', retryable: false });
      expect((terminalOf(parts) as { message: string }).message).toContain('150 ms');
      expect(Date.now() - started).toBeLessThan(1000);
      await server.waitForIdle(200);
      await quick.close();
    });

    it('reports a refused connection as retryable upstream_unreachable', async () => {
      const dead = createOllamaAdapter(
        httpInstance('ollama', 'dead', { baseUrl: await closedPortUrl() }),
        testDeps(),
      );
      const parts = await collect(dead.run(userRun('llama3.2', 'x'), { signal: never }));
      expect(terminalOf(parts)).toMatchObject({
        type: 'error',
        code: 'upstream_unreachable',
        retryable: true,
      });
      expect((terminalOf(parts) as { message: string }).message).toContain('ECONNREFUSED');
    });

    it('reports invalid tool JSON as invalid_request without calling the server', async () => {
      const parts = await collect(
        adapter.run(
          userRun('llama3.2', 'x', { tools: [{ name: 'f', description: '', parametersJson: '{' }] }),
          {
            signal: never,
          },
        ),
      );
      expect(terminalOf(parts)).toMatchObject({ type: 'error', code: 'invalid_request' });
      expect(server.requests).toHaveLength(0);
    });
  });

  describe('cancellation', () => {
    it('aborts the upstream request at once and ends with cancelled', async () => {
      server.setBehavior({ tokenCount: 200, tokenDelayMs: 20 });
      const controller = new AbortController();
      const parts: RunEventPart[] = [];
      let abortedAt = 0;
      for await (const part of adapter.run(userRun('llama3.2', 'x'), { signal: controller.signal })) {
        parts.push(part);
        if (part.type === 'text-delta' && abortedAt === 0) {
          abortedAt = Date.now();
          controller.abort('user cancelled');
        }
      }
      expect(terminalOf(parts)).toEqual({ type: 'cancelled', reason: 'user cancelled' });
      expect(parts.filter(isTerminalPart)).toHaveLength(1);
      await server.waitForIdle(100);
      const recorded = server.requests[0];
      expect(recorded.outcome).toBe('client-closed');
      expect(recorded.closedAt! - abortedAt).toBeLessThan(100);
    });

    it('cancels while waiting for the first token', async () => {
      server.setBehavior({ firstTokenDelayMs: 5000 });
      const controller = new AbortController();
      const running = collect(adapter.run(userRun('llama3.2', 'x'), { signal: controller.signal }), 2000);
      // Abort once the fake holds the request (waiting for its first token), however slow the machine is.
      for (let waited = 0; server.requests.length === 0 && waited < 1000; waited += 5) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      controller.abort();
      const parts = await running;
      expect(parts.map((part) => part.type)).toEqual(['start', 'cancelled']);
      await server.waitForIdle(100);
      expect(server.requests[0].outcome).toBe('client-closed');
    });

    it('stops the upstream request when the consumer stops iterating', async () => {
      server.setBehavior({ tokenCount: 200, tokenDelayMs: 20 });
      for await (const part of adapter.run(userRun('llama3.2', 'x'), { signal: never })) {
        if (part.type === 'text-delta') break;
      }
      await server.waitForIdle(100);
      expect(server.requests[0].outcome).toBe('client-closed');
    });

    it('close() aborts runs in flight and refuses new ones', async () => {
      server.setBehavior({ tokenCount: 200, tokenDelayMs: 20 });
      const parts: RunEventPart[] = [];
      for await (const part of adapter.run(userRun('llama3.2', 'x'), { signal: never })) {
        parts.push(part);
        if (part.type === 'text-delta' && parts.filter((p) => p.type === 'text-delta').length === 1)
          await adapter.close();
      }
      expect(terminalOf(parts)).toEqual({ type: 'cancelled', reason: 'adapter ollama-a closed' });
      await server.waitForIdle(100);
      const after = await collect(adapter.run(userRun('llama3.2', 'x'), { signal: never }));
      expect(terminalOf(after)).toMatchObject({ type: 'error', code: 'adapter_closed' });
    });
  });

  describe('commands', () => {
    const command = (name: string, fields: Record<string, unknown> = {}) =>
      create.nodeCommandRequest({
        command: name,
        adapter: 'ollama-a',
        providerId: 'ollama-local',
        ...fields,
      });

    it('lists models from tags and ps with loaded state', async () => {
      await adapter.command(command('load_model', { target: 'qwen3:8b' }), { signal: never });
      const response = await adapter.command(command('list_models'), { signal: never });
      expect(response.ok).toBe(true);
      expect(response.result).toMatchObject({
        models: 'llama3.2:latest,qwen3:8b',
        loaded: 'qwen3:8b',
        count: '2',
      });
      expect(response.lifecycle).toMatchObject({
        providerId: 'ollama-local',
        action: 'list_models',
        status: 'ok',
      });
      const qwen = response.lifecycle!.models.find((model) => model.name === 'qwen3:8b')!;
      expect(qwen.loaded).toBe(true);
      expect(qwen.sizeBytes).toBeGreaterThan(0);
      expect(new Date(qwen.expiresAt).getTime()).toBeGreaterThan(Date.now());
      expect(server.requests.map((request) => request.path)).toEqual([
        '/api/generate',
        '/api/tags',
        '/api/ps',
      ]);
    });

    it('loads with an empty prompt and unloads with keep_alive 0', async () => {
      const loaded = await adapter.command(
        command('load_model', { args: { model: 'llama3.2', keep_alive: '10m' } }),
        {
          signal: never,
        },
      );
      expect(loaded).toMatchObject({
        ok: true,
        result: { model: 'llama3.2', status: 'loaded', done_reason: 'load' },
      });
      expect(server.requests[0].body).toEqual({
        model: 'llama3.2',
        prompt: '',
        stream: false,
        keep_alive: '10m',
      });
      const unloaded = await adapter.command(command('unload_model', { target: 'llama3.2' }), {
        signal: never,
      });
      expect(unloaded).toMatchObject({ ok: true, result: { status: 'unloaded', done_reason: 'unload' } });
      expect(unloaded.lifecycle).toMatchObject({ action: 'unload_model', status: 'unloaded' });
      expect(server.requests[1].body).toMatchObject({ model: 'llama3.2', keep_alive: 0 });
    });

    it('relays pull progress through onProgress', async () => {
      const progress: ProviderLifecycleProgress[] = [];
      const response = await adapter.command(command('pull_model', { target: 'mistral:7b' }), {
        signal: never,
        onProgress: (update) => progress.push(update),
      });
      expect(response).toMatchObject({ ok: true, result: { model: 'mistral:7b', status: 'success' } });
      expect(progress[0]).toMatchObject({
        providerId: 'ollama-local',
        model: 'mistral:7b',
        status: 'pulling manifest',
      });
      expect(progress[progress.length - 1].status).toBe('success');
      expect(progress.some((update) => update.total > 0 && update.completed === update.total)).toBe(true);
      expect(server.requests[0].body).toMatchObject({
        model: 'mistral:7b',
        name: 'mistral:7b',
        stream: true,
      });
      const list = await adapter.command(command('list_models'), { signal: never });
      expect(list.result.models).toContain('mistral:7b');
    });

    it('fails a pull whose stream reports an error', async () => {
      server.setBehavior({ pullable: [] });
      const response = await adapter.command(command('pull_model', { target: 'nope' }), { signal: never });
      expect(response.ok).toBe(false);
      expect(response.error).toBe('upstream_error: pull model manifest: file does not exist');
    });

    it('answers capabilities with the served models once known', async () => {
      const before = await adapter.command(command('capabilities'), { signal: never });
      expect(before.result).toEqual({
        adapter: 'ollama',
        targets: '',
        base_url: server.url,
        provider: 'ollama',
      });
      await adapter.probeHealth(never);
      const after = await adapter.command(command('capabilities'), { signal: never });
      expect(after.result.targets).toBe('llama3.2:latest,qwen3:8b');
    });

    it('rejects unknown commands and lifecycle commands without a model', async () => {
      const unknown = await adapter.command(command('sessions'), { signal: never });
      expect(unknown).toMatchObject({ ok: false, error: 'command sessions not supported by adapter ollama' });
      const missing = await adapter.command(command('load_model'), { signal: never });
      expect(missing.ok).toBe(false);
      expect(missing.error).toContain('needs a model');
    });

    it('reports upstream failures of commands as ok=false', async () => {
      server.setBehavior({ failure: { kind: 'http', status: 500, message: 'disk full' } });
      const response = await adapter.command(command('list_models'), { signal: never });
      expect(response).toMatchObject({ ok: false, error: 'upstream_http_500: disk full' });
    });

    it('never logs configured header values', async () => {
      const deps = testDeps();
      const logged = createOllamaAdapter(
        httpInstance('ollama', 'l', { baseUrl: server.url, headers: { authorization: 'Bearer top-secret' } }),
        deps,
      );
      server.setBehavior({ failure: { kind: 'http', status: 500, message: 'x' } });
      await collect(logged.run(userRun('llama3.2', 'x'), { signal: never }));
      await logged.command(command('list_models'), { signal: never });
      expect(deps.logger.entries.length).toBeGreaterThan(0);
      expect(JSON.stringify(deps.logger.entries)).not.toContain('top-secret');
    });
  });

  it('tracks health: healthy → closed server unreachable → HTTP 500 unhealthy → healthy', async () => {
    const healthy = await adapter.probeHealth(never);
    expect(healthy).toEqual({
      health: 'healthy',
      detail: '2 model(s) served',
      models: ['llama3.2:latest', 'qwen3:8b'],
    });

    const port = new URL(server.url).port;
    await server.close();
    const unreachable = await adapter.probeHealth(never);
    expect(unreachable.health).toBe('unreachable');
    expect(unreachable.detail).toContain('ECONNREFUSED');
    expect(unreachable.cause).toBe('connection_refused');

    server = await startFakeOllama({ port: Number(port) });
    server.setBehavior({ failure: { kind: 'http', status: 500, message: 'loading' } });
    const unhealthy = await adapter.probeHealth(never);
    expect(unhealthy).toEqual({
      health: 'unhealthy',
      detail: 'HTTP 500: loading',
      cause: 'http_status',
      models: [],
    });

    server.setBehavior({ failure: undefined });
    expect((await adapter.probeHealth(never)).health).toBe('healthy');
  });

  it('lists the models Ollama holds loaded (/api/ps): none at first, the model after a run', async () => {
    expect(await adapter.residentModels?.(never)).toEqual([]);
    await collect(adapter.run(userRun('llama3.2', 'hello'), { signal: never }));
    expect(await adapter.residentModels?.(never)).toEqual(['llama3.2:latest']);
    expect(server.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/ps' });
    server.setBehavior({ failure: { kind: 'http', status: 500, message: 'boom' } });
    await expect(adapter.residentModels?.(never)).rejects.toThrow('boom');
  });

  it('reports a probe that gets no answer in time as unreachable', async () => {
    const slow = createOllamaAdapter(
      httpInstance('ollama', 'slow', { baseUrl: server.url, requestTimeoutMs: 100 }),
      testDeps(),
    );
    server.setBehavior({ failure: { kind: 'stall', afterTokens: 0, paths: ['/api/tags'] } });
    const started = Date.now();
    const result = await slow.probeHealth(never);
    expect(result.health).toBe('unreachable');
    expect(result.detail).toContain('100 ms');
    expect(Date.now() - started).toBeLessThan(1000);
    await server.waitForIdle(200);
    await slow.close();
  });

  it('serves several named instances against different servers', async () => {
    const other = await startFakeOllama({ behavior: { models: ['phi4:latest'], reply: () => 'from other' } });
    try {
      const second = createOllamaAdapter(
        httpInstance('ollama', 'ollama-b', { baseUrl: other.url }),
        testDeps(),
      );
      const [a, b] = await Promise.all([
        collect(adapter.run(userRun('llama3.2', 'first'), { signal: never })),
        collect(second.run(userRun('phi4', 'x'), { signal: never })),
      ]);
      expect(a[0]).toMatchObject({ adapter: 'ollama-a' });
      expect(b[0]).toMatchObject({ adapter: 'ollama-b' });
      expect(textOf(a)).toContain('first');
      expect(textOf(b)).toBe('from other');
      expect(server.requests).toHaveLength(1);
      expect(other.requests).toHaveLength(1);
      await second.close();
    } finally {
      await other.close();
    }
  });

  it('rejects an invalid base_url at build time', () => {
    expect(() =>
      createOllamaAdapter(httpInstance('ollama', 'bad', { baseUrl: 'not a url' }), testDeps()),
    ).toThrow("base_url 'not a url' is not a valid URL");
    expect(() =>
      createOllamaAdapter(httpInstance('ollama', 'bad', { baseUrl: 'ftp://x' }), testDeps()),
    ).toThrow('base_url must be http(s)');
  });

  it('reports terminateSession as false (no sessions)', async () => {
    expect(await adapter.terminateSession('llama3.2', 'session-1')).toBe(false);
  });
});

describe('ollama pull progress throttling', () => {
  it('relays status changes and finished layers but thins byte progress within one status', async () => {
    const { pullOllamaModel } = await import('./ollama-lifecycle.js');
    const { UpstreamExchange } = await import('../http/upstream-exchange.js');
    const lines = [
      { status: 'pulling manifest' },
      { status: 'pulling abc', digest: 'sha256:abc', total: 100, completed: 10 },
      { status: 'pulling abc', digest: 'sha256:abc', total: 100, completed: 20 },
      { status: 'pulling abc', digest: 'sha256:abc', total: 100, completed: 30 },
      { status: 'pulling abc', digest: 'sha256:abc', total: 100, completed: 100 },
      { status: 'success' },
    ];
    const body = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
    const fakeFetch = (() => Promise.resolve(new Response(body, { status: 200 }))) as unknown as typeof fetch;
    const { fetchHttpClient } = await import('../http/http-client.js');
    const exchange = new UpstreamExchange({
      http: fetchHttpClient(fakeFetch),
      now: () => 0,
      clock: new ManualClock(),
      signal: never,
      idleTimeoutMs: 1000,
    });
    const seen: string[] = [];
    await pullOllamaModel(
      exchange,
      { url: (path) => `http://ollama.invalid${path}`, headers: {} },
      'm',
      'p',
      (progress) => seen.push(`${progress.status}:${progress.completed}`),
      () => 0,
    );
    exchange.dispose();
    expect(seen).toEqual(['pulling manifest:0', 'pulling abc:10', 'pulling abc:100', 'success:0']);
  });
});
