// Faithfulness of the fake Ollama, checked with the official `ollama` npm client and raw fetch.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Ollama } from 'ollama';

import type { FakeServer } from '../fake-http/fake-http-server.js';
import { startFakeOllama } from './fake-ollama.js';

describe('fake Ollama', () => {
  let server: FakeServer;
  let client: Ollama;

  beforeEach(async () => {
    server = await startFakeOllama();
    client = new Ollama({ host: server.url });
  });
  afterEach(async () => {
    await server.close();
  });

  it('streams /api/chat as NDJSON with a deterministic reply and final counts', async () => {
    const stream = await client.chat({
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'hello world' }],
      stream: true,
    });
    const parts = [];
    for await (const part of stream) parts.push(part);
    expect(parts.map((part) => part.message.content).join('')).toBe(
      'hello world hello world hello world hello world',
    );
    const last = parts[parts.length - 1];
    expect(last.done).toBe(true);
    expect(last.done_reason).toBe('stop');
    expect(last.eval_count).toBe(8);
    expect(last.prompt_eval_count).toBe(2);
    expect(parts.slice(0, -1).every((part) => !part.done)).toBe(true);
    const recorded = server.requests[0];
    expect(recorded.path).toBe('/api/chat');
    expect(recorded.headers['content-type']).toBe('application/json');
    expect(recorded.body).toMatchObject({ model: 'llama3.2', stream: true });
  });

  it('answers non-streaming chat with thinking and tool calls with object arguments', async () => {
    server.setBehavior({
      reasoning: 'let me think',
      tokenCount: 0,
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
    });
    const response = await client.chat({
      model: 'qwen3:8b',
      messages: [{ role: 'user', content: 'weather?' }],
      think: true,
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'd', parameters: { type: 'object' } },
        },
      ],
    });
    expect(response.message.thinking).toBe('let me think');
    expect(response.message.content).toBe('');
    expect(response.message.tool_calls).toEqual([
      { id: expect.any(String), function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } },
    ]);
    expect(response.done_reason).toBe('stop');
  });

  it('omits thinking unless the request asks to think', async () => {
    server.setBehavior({ reasoning: 'hidden thoughts' });
    const response = await client.chat({ model: 'qwen3:8b', messages: [{ role: 'user', content: 'x' }] });
    expect(response.message.thinking).toBeUndefined();
  });

  it('stops at options.num_predict with done_reason length', async () => {
    const response = await client.chat({
      model: 'llama3.2:latest',
      messages: [{ role: 'user', content: 'a b c' }],
      options: { num_predict: 3 },
    });
    expect(response.message.content).toBe('a b c');
    expect(response.done_reason).toBe('length');
    expect(response.eval_count).toBe(3);
  });

  it('lists tags, ps, version and the root banner', async () => {
    const tags = await client.list();
    expect(tags.models.map((model) => model.name)).toEqual(['llama3.2:latest', 'qwen3:8b']);
    expect(tags.models[0]).toMatchObject({
      model: 'llama3.2:latest',
      size: expect.any(Number),
      digest: expect.any(String),
    });
    expect((await client.ps()).models).toEqual([]);
    expect((await client.version()).version).toMatch(/^\d+\.\d+\.\d+$/);
    const root = await fetch(`${server.url}/`);
    expect(await root.text()).toBe('Ollama is running');
  });

  it('loads with an empty prompt and unloads with keep_alive 0', async () => {
    const loaded = await client.generate({ model: 'qwen3:8b', prompt: '' });
    expect(loaded.done_reason).toBe('load');
    const ps = await client.ps();
    expect(ps.models.map((model) => model.name)).toEqual(['qwen3:8b']);
    expect(new Date(ps.models[0].expires_at).getTime()).toBeGreaterThan(Date.now());
    const unloaded = await client.generate({ model: 'qwen3:8b', prompt: '', keep_alive: 0 });
    expect(unloaded.done_reason).toBe('unload');
    expect((await client.ps()).models).toEqual([]);
  });

  it('generates text on /api/generate', async () => {
    server.setBehavior({ reply: () => 'one two three' });
    const response = await client.generate({ model: 'llama3.2', prompt: 'count' });
    expect(response.response).toBe('one two three');
    expect(response.done).toBe(true);
  });

  it('streams pull progress and adds the model (JS client sends name)', async () => {
    const stream = await client.pull({ model: 'mistral:7b', stream: true });
    const statuses: string[] = [];
    let sawProgress = false;
    for await (const progress of stream) {
      statuses.push(progress.status);
      if (progress.total > 0 && progress.completed > 0) sawProgress = true;
    }
    expect(statuses[0]).toBe('pulling manifest');
    expect(statuses[statuses.length - 1]).toBe('success');
    expect(sawProgress).toBe(true);
    expect(server.requests[0].body).toMatchObject({ name: 'mistral:7b' });
    expect((await client.list()).models.map((model) => model.name)).toContain('mistral:7b');
  });

  it('accepts model instead of name on /api/pull and reports a missing manifest', async () => {
    server.setBehavior({ pullable: ['known'] });
    const ok = await fetch(`${server.url}/api/pull`, {
      method: 'POST',
      body: JSON.stringify({ model: 'known', stream: false }),
    });
    expect(await ok.json()).toEqual({ status: 'success' });
    await expect(client.pull({ model: 'nope' })).rejects.toThrow('pull model manifest: file does not exist');
    const stream = await client.pull({ model: 'nope', stream: true });
    await expect(
      (async () => {
        for await (const _progress of stream) void _progress;
      })(),
    ).rejects.toThrow('pull model manifest: file does not exist');
  });

  it('answers unknown models with a 404 {"error"} body', async () => {
    await expect(
      client.chat({ model: 'ghost', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status_code: 404,
      error: "model 'ghost' not found",
    });
  });

  it('injects HTTP failures a limited number of times', async () => {
    server.setBehavior({ failure: { kind: 'http', status: 500, message: 'boom', times: 1 } });
    await expect(client.list()).rejects.toMatchObject({ status_code: 500, error: 'boom' });
    expect((await client.list()).models.length).toBe(2);
  });

  it('injects a mid-stream {"error"} line after N tokens', async () => {
    server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 2, message: 'gpu melted' } });
    const stream = await client.chat({
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const part of stream) seen.push(part.message.content);
      })(),
    ).rejects.toThrow('gpu melted');
    expect(seen).toEqual(['hi', ' hi']);
  });

  it('drops the connection after N tokens', async () => {
    server.setBehavior({ failure: { kind: 'drop', afterTokens: 1 } });
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama3.2', messages: [{ role: 'user', content: 'x' }] }),
    });
    await expect(response.text()).rejects.toThrow();
    await server.waitForIdle(1000);
    expect(server.requests[0].outcome).toBe('dropped');
  });

  it('stalls until the client aborts, then records the client close', async () => {
    server.setBehavior({ failure: { kind: 'stall', afterTokens: 1 } });
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama3.2', messages: [{ role: 'user', content: 'x' }] }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value as Uint8Array)).toContain('"content":"x"');
    expect(server.activeRequests).toBe(1);
    const abortedAt = Date.now();
    controller.abort();
    await server.waitForIdle(100);
    expect(server.requests[0].outcome).toBe('client-closed');
    expect(server.requests[0].closedAt! - abortedAt).toBeLessThan(100);
  });

  it('waits firstTokenDelayMs before the first token and tokenDelayMs between tokens', async () => {
    server.setBehavior({ firstTokenDelayMs: 60, tokenDelayMs: 10, tokenCount: 3 });
    const started = Date.now();
    const stream = await client.chat({
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const times: number[] = [];
    for await (const _part of stream) times.push(Date.now() - started);
    expect(times[0]).toBeGreaterThanOrEqual(55);
    expect(times[2] - times[0]).toBeGreaterThanOrEqual(15);
  });

  it('tracks open connections and requests in flight, and closes idle keep-alive sockets on close()', async () => {
    server.setBehavior({ tokenCount: 50, tokenDelayMs: 10 });
    expect(server.activeConnections).toBe(0);
    const stream = await client.chat({
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    expect(server.activeConnections).toBe(1);
    expect(server.activeRequests).toBe(1);
    await expect(server.waitForIdle(20)).rejects.toThrow('still has 1 request(s) in flight');
    for await (const _part of stream) void _part;
    await server.waitForIdle(500);
    expect(server.requests[0].outcome).toBe('completed');
    await server.close();
    expect(server.activeConnections).toBe(0);
  });

  it('applies stall and drop to listings but keeps them free of mid-stream failures and token delays', async () => {
    server.setBehavior({
      firstTokenDelayMs: 2000,
      failure: { kind: 'mid-stream', afterTokens: 0, message: 'x' },
    });
    const started = Date.now();
    expect((await client.list()).models).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(1000);
    server.setBehavior({ failure: { kind: 'drop', afterTokens: 0, paths: ['/api/ps'] } });
    await expect(client.ps()).rejects.toThrow();
    expect(server.requests[server.requests.length - 1].outcome).toBe('dropped');
  });

  it('rejects a chat without a model with 400', async () => {
    const response = await fetch(`${server.url}/api/chat`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'model is required' });
  });
});
