import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startAgentModelServer, type AgentModelServer } from './agent-model-server.js';
import { decideAction } from './conversation.js';

describe('decideAction', () => {
  it('answers the first iop token with _OK and names tokens of earlier user turns', () => {
    expect(decideAction([{ role: 'user', text: 'Convert iop_one' }], [])).toEqual({
      kind: 'text',
      text: 'IOP_ONE_OK',
    });
    expect(
      decideAction(
        [
          { role: 'user', text: 'iop_one' },
          { role: 'assistant', text: 'IOP_ONE_OK' },
          { role: 'user', text: 'now iop_two' },
          { role: 'user', text: '[SYSTEM] This run is not complete' },
        ],
        [],
      ),
    ).toEqual({ kind: 'text', text: 'IOP_TWO_OK (history: IOP_ONE)' });
  });

  it('calls the shell tool for RUN:<cmd>, shaping arguments after its schema', () => {
    const tools = [
      {
        name: 'run_commands',
        parameters: { properties: { commands: { type: 'array' } }, required: ['commands'] },
      },
    ];
    expect(decideAction([{ role: 'user', text: '<task>RUN:echo hi</task>' }], tools)).toEqual({
      kind: 'tool',
      name: 'run_commands',
      arguments: { commands: ['echo hi'] },
    });
  });

  it('quotes tool output and wraps answers in a completion tool when one exists', () => {
    const tools = [
      {
        name: 'submit_and_exit',
        parameters: { properties: { summary: { type: 'string' } }, required: ['summary'] },
      },
    ];
    expect(decideAction([{ role: 'tool', text: 'exit 0\nOutput: hello' }], tools)).toEqual({
      kind: 'tool',
      name: 'submit_and_exit',
      arguments: { summary: 'Final answer: TOOL_OUTPUT: exit 0 Output: hello' },
      text: 'TOOL_OUTPUT: exit 0 Output: hello',
    });
  });
});

describe('agent model server', () => {
  let server: AgentModelServer;
  beforeEach(async () => {
    server = await startAgentModelServer({ chunkDelayMs: 0 });
  });
  afterEach(async () => {
    await server.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('streams chat completions with a tool call', async () => {
    const response = await post('/v1/chat/completions', {
      stream: true,
      messages: [{ role: 'user', content: 'RUN:ls' }],
      tools: [
        {
          type: 'function',
          function: { name: 'bash', parameters: { properties: { command: { type: 'string' } } } },
        },
      ],
    });
    const text = await response.text();
    expect(text).toContain('"tool_calls"');
    expect(text).toContain('\\"command\\":\\"ls\\"');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  it('streams Responses events with codex rate-limit headers', async () => {
    const response = await post('/v1/responses', {
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'iop_x' }] }],
    });
    expect(response.headers.get('x-codex-primary-used-percent')).toBe('12.5');
    const text = await response.text();
    expect(text).toContain('event: response.completed');
    expect(text).toContain('"delta":"IOP_X_OK"');
  });

  it('answers Anthropic messages (stream and JSON), count_tokens and HEAD /', async () => {
    const streamed = await (
      await post('/v1/messages', { stream: true, messages: [{ role: 'user', content: 'iop_y' }] })
    ).text();
    expect(streamed).toContain('event: message_stop');
    expect(streamed).toContain('"text":"IOP_Y_OK"');
    const json = (await (
      await post('/v1/messages', { messages: [{ role: 'user', content: [{ type: 'text', text: 'iop_z' }] }] })
    ).json()) as {
      content: Array<{ text: string }>;
    };
    expect(json.content[0]?.text).toBe('IOP_Z_OK');
    expect(
      ((await (await post('/v1/messages/count_tokens', { messages: [] })).json()) as { input_tokens: number })
        .input_tokens,
    ).toBeGreaterThan(0);
    expect((await fetch(server.url, { method: 'HEAD' })).status).toBe(200);
    expect(server.requests.map((request) => request.path)).toEqual([
      '/v1/messages',
      '/v1/messages',
      '/v1/messages/count_tokens',
      '/',
    ]);
  });
});
