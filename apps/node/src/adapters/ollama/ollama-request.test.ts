import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';

import { UpstreamError } from '../http/upstream-error.js';
import { userRun } from '../http/test-support/http-adapter-fixtures.js';
import { toOllamaChatRequest } from './ollama-request.js';

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
