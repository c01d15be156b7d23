import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';

import { userRun } from '../http/test-support/http-adapter-fixtures.js';
import { ToolCallAssembler } from './tool-call-assembler.js';
import { imageMimeType, toOpenAIChatRequest } from './openai-request.js';

describe('toOpenAIChatRequest', () => {
  it('streams with usage and passes standard fields through at the top level', () => {
    const body = toOpenAIChatRequest(
      userRun('served-model', 'hi', {
        params: create.generationParams({
          maxTokens: 100,
          temperature: 0.5,
          topP: 0.8,
          topK: 20,
          stop: ['###'],
          reasoningEffort: 'low',
        }),
        toolChoiceJson: '{"type":"function","function":{"name":"f"}}',
        tools: [{ name: 'f', description: 'does f', parametersJson: '{"type":"object"}' }],
      }),
      { provider: 'vllm' },
    );
    expect(body).toEqual({
      model: 'served-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
      temperature: 0.5,
      top_p: 0.8,
      top_k: 20,
      stop: ['###'],
      reasoning_effort: 'low',
      tools: [
        { type: 'function', function: { name: 'f', description: 'does f', parameters: { type: 'object' } } },
      ],
      tool_choice: { type: 'function', function: { name: 'f' } },
    });
  });

  it('asks for one JSON answer (stream false, no stream_options) when the run is collected', () => {
    const body = toOpenAIChatRequest(userRun('m', 'hi', { collect: true }), { provider: 'vllm' });
    expect(body.stream).toBe(false);
    expect(body).not.toHaveProperty('stream_options');
  });

  it('maps tool calls, tool results and images', () => {
    const body = toOpenAIChatRequest(
      userRun('m', '', {
        messages: [
          create.chatMessage({ role: 'user', content: 'look', images: ['/9j/4AAQ', 'iVBORw0K'] }),
          create.chatMessage({
            role: 'assistant',
            toolCalls: [create.toolCall({ id: 'call_1', name: 'f', argumentsJson: '{"a":1}' })],
          }),
          create.chatMessage({ role: 'tool', content: 'result', toolCallId: 'call_1', name: 'f' }),
        ],
      }),
      { provider: '' },
    );
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      { role: 'tool', content: 'result', tool_call_id: 'call_1' },
    ]);
  });

  it('passes remote image URLs as image_url parts unchanged, after the inline images', () => {
    const url = 'https://images.example/cat.png?size=large&v=2';
    const body = toOpenAIChatRequest(
      userRun('m', '', {
        messages: [
          create.chatMessage({
            role: 'user',
            content: 'what is this?',
            images: ['iVBORw0K'],
            imageUrls: [url],
          }),
          create.chatMessage({ role: 'user', content: '', imageUrls: ['http://a.example/b.jpg'] }),
        ],
      }),
      { provider: 'vllm' },
    );
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
          { type: 'image_url', image_url: { url } },
        ],
      },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://a.example/b.jpg' } }] },
    ]);
  });

  it('maps think to chat_template_kwargs for vLLM only, and a bare tool_choice word to a string', () => {
    const think = create.generationParams({ think: false });
    expect(
      toOpenAIChatRequest(userRun('m', 'x', { params: think }), { provider: 'vllm' }).chat_template_kwargs,
    ).toEqual({
      enable_thinking: false,
    });
    expect(
      toOpenAIChatRequest(userRun('m', 'x', { params: think }), { provider: 'openai' }).chat_template_kwargs,
    ).toBeUndefined();
    expect(
      toOpenAIChatRequest(userRun('m', 'x', { toolChoiceJson: 'required' }), { provider: '' }).tool_choice,
    ).toBe('required');
    const plain = toOpenAIChatRequest(userRun('m', 'x'), { provider: '' });
    expect(Object.keys(plain).sort()).toEqual(['messages', 'model', 'stream', 'stream_options']);
  });

  it('rejects invalid tool schemas', () => {
    expect(() =>
      toOpenAIChatRequest(
        userRun('m', 'x', { tools: [{ name: 'f', description: '', parametersJson: 'nope' }] }),
        {
          provider: '',
        },
      ),
    ).toThrow('parameters of tool f are not valid JSON');
  });

  it('sniffs image MIME types', () => {
    expect(imageMimeType('R0lGODlh')).toBe('image/gif');
    expect(imageMimeType('UklGRiQ')).toBe('image/webp');
  });
});

describe('toOpenAIChatRequest: forwarded and typed OpenAI fields', () => {
  it('passes seed, penalties and response_format as is, and merges the forwarded fields', () => {
    const responseFormat = { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' } } };
    const body = toOpenAIChatRequest(
      userRun('served', 'hi', {
        params: create.generationParams({
          seed: 7,
          presencePenalty: 0.1,
          frequencyPenalty: 0.2,
          responseFormatJson: JSON.stringify(responseFormat),
          think: true,
        }),
        extraBodyJson: JSON.stringify({
          top_k: 20,
          logit_bias: { '50256': -100 },
          model: 'overridden?',
          chat_template_kwargs: { enable_thinking: false, custom: 1 },
        }),
      }),
      { provider: 'vllm' },
    );
    expect(body).toMatchObject({
      model: 'served',
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      response_format: responseFormat,
      top_k: 20,
      logit_bias: { '50256': -100 },
      // IOP's own keys win inside a merged object.
      chat_template_kwargs: { enable_thinking: true, custom: 1 },
    });
  });

  it('refuses forwarded fields that are not a JSON object', () => {
    expect(() =>
      toOpenAIChatRequest(userRun('served', 'hi', { extraBodyJson: '[1]' }), { provider: 'vllm' }),
    ).toThrow(/extra_body_json/);
  });
});

describe('ToolCallAssembler', () => {
  it('joins argument pieces per index and returns calls in index order', () => {
    const assembler = new ToolCallAssembler();
    assembler.add({ index: 1, id: 'b', function: { name: 'second', arguments: '' } });
    assembler.add({ index: 0, id: 'a', function: { name: 'first', arguments: '{"x":' } });
    assembler.add({ index: 1, function: { arguments: '{}' } });
    assembler.add({ index: 0, function: { arguments: '1}' } });
    expect(assembler.drain((index) => `gen_${index}`)).toEqual([
      create.toolCall({ id: 'a', name: 'first', argumentsJson: '{"x":1}', index: 0 }),
      create.toolCall({ id: 'b', name: 'second', argumentsJson: '{}', index: 1 }),
    ]);
    expect(assembler.size).toBe(0);
  });

  it('invents ids and empty-object arguments when the server sends none', () => {
    const assembler = new ToolCallAssembler();
    assembler.add({ function: { name: 'f' } });
    expect(assembler.drain((index) => `gen_${index}`)).toEqual([
      create.toolCall({ id: 'gen_0', name: 'f', argumentsJson: '{}', index: 0 }),
    ]);
  });
});
