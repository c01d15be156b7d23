// Faithfulness of the fake vLLM server, checked with the official `openai` npm client (v6).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';

import type { FakeServer } from '../fake-http/fake-http-server.js';
import { startFakeOpenAI } from './fake-openai.js';

const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

describe('fake OpenAI (vLLM flavour)', () => {
  let server: FakeServer;
  let client: OpenAI;

  beforeEach(async () => {
    server = await startFakeOpenAI();
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterEach(async () => {
    await server.close();
  });

  it('lists models with vLLM fields', async () => {
    const page = await client.models.list();
    expect(page.data).toEqual([
      expect.objectContaining({
        id: MODEL,
        object: 'model',
        owned_by: 'vllm',
        root: MODEL,
        max_model_len: 32768,
      }),
    ]);
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-test');
  });

  it('answers a non-streaming chat completion', async () => {
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message.content).toBe('hello there hello there hello there hello there');
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 8, total_tokens: 10 });
  });

  it('answers legacy text completions, whole and streamed with a usage chunk, and refuses several prompts', async () => {
    const whole = await client.completions.create({ model: MODEL, prompt: 'hello there', max_tokens: 3 });
    expect(whole.object).toBe('text_completion');
    expect(whole.id).toMatch(/^cmpl-/);
    expect(whole.choices[0]?.text).toBe('hello there hello');
    expect(whole.choices[0]?.finish_reason).toBe('length');
    expect(whole.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });

    const stream = await client.completions.create({
      model: MODEL,
      prompt: ['hello there'],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('hello there hello there hello there hello there');
    expect(usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 8 });
    expect(server.requests[server.requests.length - 1]?.path).toBe('/v1/completions');

    const several = await client.completions
      .create({ model: MODEL, prompt: ['a', 'b'] })
      .catch((caught: unknown) => caught as { status?: number });
    expect((several as { status?: number }).status).toBe(400);
  });

  it('streams reasoning_content, content and a final usage chunk with include_usage', async () => {
    server.setBehavior({ reasoning: 'think hard', tokenCount: 2 });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'a b' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let reasoning = '';
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      content += delta?.content ?? '';
      reasoning += delta?.reasoning_content ?? '';
    }
    expect(content).toBe('a b');
    expect(reasoning).toBe('think hard');
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe('stop');
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('omits usage chunks without include_usage and ends with [DONE]', async () => {
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const text = await response.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).not.toContain('"usage"');
  });

  it('splits tool-call arguments across chunks that finalChatCompletion reassembles', async () => {
    server.setBehavior({
      tokenCount: 0,
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }],
    });
    const runner = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls![0];
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', days: 3 });
    expect(call.id).toMatch(/^chatcmpl-tool-/);
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    const raw = server.requests[0].body as { stream: boolean };
    expect(raw.stream).toBe(true);
  });

  it('returns tool calls and null content in a non-streaming completion', async () => {
    server.setBehavior({ tokenCount: 0, toolCalls: [{ id: 'call_1', name: 'f', arguments: { a: 1 } }] });
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(completion.choices[0].message.content).toBeNull();
    expect(completion.choices[0].message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
    ]);
  });

  it('caps at max_tokens with finish_reason length', async () => {
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 3,
    });
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBe(3);
  });

  it('maps an unknown model to NotFoundError with the vLLM error body', async () => {
    const error = await client.chat.completions
      .create({ model: 'ghost', messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).error).toEqual({
      message: 'The model `ghost` does not exist.',
      type: 'NotFoundError',
      param: null,
      code: 404,
    });
  });

  it('maps injected HTTP failures to the SDK error classes', async () => {
    server.setBehavior({ failure: { kind: 'http', status: 429, message: 'slow down', times: 1 } });
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    server.setBehavior({ failure: { kind: 'http', status: 500, message: 'down', times: 1 } });
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    expect((await client.models.list()).data.length).toBe(1);
  });

  it('makes the SDK throw APIError on a mid-stream error event', async () => {
    server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 2, message: 'engine died' } });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain('engine died');
    expect(seen).toEqual(['', 'x', ' x']);
  });

  it('answers a mid-stream failure of a non-streaming request with HTTP 500', async () => {
    server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 2, message: 'engine died' } });
    await expect(
      client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  });

  it('drops the connection mid-stream', async () => {
    server.setBehavior({ failure: { kind: 'drop', afterTokens: 1 } });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _chunk of stream) void _chunk;
      })(),
    ).rejects.toThrow();
    expect(server.requests[0].outcome).toBe('dropped');
  });

  it('serves /health with an empty 200 body', async () => {
    const response = await fetch(`${server.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it('answers a non-streaming Responses request', async () => {
    const response = await client.responses.create({
      model: MODEL,
      input: 'hi you',
      instructions: 'be brief',
    });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('hi you hi you hi you hi you');
    expect(response.usage).toMatchObject({ output_tokens: 8 });
  });

  it('streams Responses events that the SDK assembles into a final response', async () => {
    server.setBehavior({
      reasoning: 'plan it',
      tokenCount: 2,
      toolCalls: [{ name: 'lookup', arguments: { q: 'iop' } }],
    });
    const stream = client.responses.stream({ model: MODEL, input: [{ role: 'user', content: 'go now' }] });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types[types.length - 1]).toBe('response.completed');
    expect(types).toContain('response.output_text.delta');
    expect(types).toContain('response.function_call_arguments.delta');
    // The SDK computes output_text only for non-streaming responses; read the message item instead.
    const message = final.output.find((item) => item.type === 'message');
    expect(message).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: 'go now' }] });
    const call = final.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ name: 'lookup', arguments: '{"q":"iop"}' });
    const reasoning = final.output.find((item) => item.type === 'reasoning');
    expect(reasoning).toMatchObject({ content: [{ type: 'reasoning_text', text: 'plan it' }] });
  });

  it('ends a failed Responses stream with response.failed', async () => {
    server.setBehavior({ failure: { kind: 'mid-stream', afterTokens: 1, message: 'oops' } });
    const stream = client.responses.stream({ model: MODEL, input: 'x' });
    const events: { type: string }[] = [];
    for await (const event of stream) events.push(event);
    const failed = events[events.length - 1] as { type: string; response?: { error?: { message: string } } };
    expect(failed.type).toBe('response.failed');
    expect(failed.response?.error?.message).toBe('oops');
  });
});
