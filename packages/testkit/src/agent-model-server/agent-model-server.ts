// A loopback fake model server for coding-agent CLIs (opencode, cline, codex, claude), so their real binaries run
// offline in tests and transcript recordings. Serves what each CLI needs:
//   GET  /v1/models                 model list (fake-model)
//   POST /v1/chat/completions       OpenAI chat, SSE or JSON, tool calls           (opencode, cline)
//   POST /v1/responses              OpenAI Responses SSE, function calls          (codex)
//   POST /v1/messages               Anthropic Messages, SSE or JSON, tool_use     (claude)
//   POST /v1/messages/count_tokens  token estimate                                 (claude)
//   HEAD / , GET /                  reachability checks                            (claude)
// What the model answers is decided in conversation.ts (RUN:<cmd> makes a shell tool call). Codex responses carry
// `x-codex-*` rate-limit headers so codex writes rate_limits into its rollout files (for `status`).
// Every request is recorded; `close()` destroys open sockets.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  anthropicTools,
  anthropicTurns,
  chatTools,
  chatTurns,
  decideAction,
  responsesTools,
  responsesTurns,
  type ModelAction,
  type ToolSpec,
  type Turn,
} from './conversation.js';

export interface AgentModelRequest {
  method: string;
  path: string;
  body: unknown;
  action?: ModelAction;
}

export interface AgentModelServer {
  /** e.g. http://127.0.0.1:41234 (no trailing slash, no /v1). */
  readonly url: string;
  readonly requests: AgentModelRequest[];
  close(): Promise<void>;
}

export interface AgentModelServerOptions {
  port?: number;
  host?: string;
  /** Delay between streamed chunks (ms). */
  chunkDelayMs?: number;
  /** Values of the codex rate-limit headers (used percent of the primary / secondary window). */
  rateLimits?: { primaryUsedPercent: number; secondaryUsedPercent: number };
  /** One line per model request (path, tool names, decided action), for recordings and debugging. */
  log?: (line: string) => void;
}

type Json = Record<string, unknown>;

export async function startAgentModelServer(
  options: AgentModelServerOptions = {},
): Promise<AgentModelServer> {
  const requests: AgentModelRequest[] = [];
  const sockets = new Set<Socket>();
  const chunkDelayMs = options.chunkDelayMs ?? 5;
  const limits = options.rateLimits ?? { primaryUsedPercent: 12.5, secondaryUsedPercent: 40 };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw ? (JSON.parse(raw) as unknown) : undefined;
      } catch {
        body = undefined;
      }
      const record: AgentModelRequest = {
        method: request.method ?? 'GET',
        path: (request.url ?? '/').split('?')[0] ?? '/',
        body,
      };
      requests.push(record);
      handle(record, response).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function handle(record: AgentModelRequest, response: http.ServerResponse): Promise<void> {
    const body = (typeof record.body === 'object' && record.body !== null ? record.body : {}) as Json;
    const route = record.path.replace(/^\/v1(?=\/)/, '');
    if (record.method === 'HEAD' || (record.method === 'GET' && record.path === '/')) {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(record.method === 'HEAD' ? undefined : 'ok');
      return;
    }
    if (record.method === 'GET' && route === '/models') {
      sendJson(response, {
        object: 'list',
        data: [
          {
            id: 'fake-model',
            object: 'model',
            created: 0,
            owned_by: 'iop',
            type: 'model',
            display_name: 'Fake Model',
          },
        ],
        has_more: false,
      });
      return;
    }
    if (record.method !== 'POST') {
      sendJson(response, { error: { message: `no route ${record.method} ${record.path}` } }, 404);
      return;
    }
    switch (route) {
      case '/chat/completions': {
        record.action = decide(record, chatTurns(body), chatTools(body));
        await chatCompletion(response, body, record.action);
        return;
      }
      case '/responses': {
        record.action = decide(record, responsesTurns(body), responsesTools(body));
        await responsesStream(response, body, record.action);
        return;
      }
      case '/messages': {
        record.action = decide(record, anthropicTurns(body), anthropicTools(body));
        await anthropicMessage(response, body, record.action);
        return;
      }
      case '/messages/count_tokens':
        sendJson(response, { input_tokens: Math.ceil(JSON.stringify(body).length / 4) });
        return;
      default:
        sendJson(response, { error: { message: `no route ${record.method} ${record.path}` } }, 404);
    }
  }

  function decide(record: AgentModelRequest, turns: Turn[], tools: ToolSpec[]): ModelAction {
    const action = decideAction(turns, tools);
    const last = turns[turns.length - 1];
    options.log?.(
      `${record.path} turns=${turns.length} last=${last?.role ?? '-'}:${JSON.stringify((last?.text ?? '').slice(0, 120))} ` +
        `tools=${tools.map((tool) => tool.name).join(',')} -> ${JSON.stringify(action).slice(0, 200)}`,
    );
    return action;
  }

  function sendJson(
    response: http.ServerResponse,
    value: unknown,
    status = 200,
    headers: Record<string, string> = {},
  ) {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(value));
  }

  function startSse(response: http.ServerResponse, headers: Record<string, string> = {}) {
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
  }

  async function writeEvent(response: http.ServerResponse, data: unknown, event?: string) {
    response.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
    if (chunkDelayMs > 0) await sleep(chunkDelayMs);
  }

  function pieces(text: string): string[] {
    return text.match(/\S+\s*|\s+/g) ?? [text];
  }

  function usageOf(body: Json, output: string) {
    const prompt = Math.max(1, Math.ceil(JSON.stringify(body).length / 40));
    return { prompt, completion: Math.max(1, pieces(output).length) };
  }

  async function chatCompletion(response: http.ServerResponse, body: Json, action: ModelAction) {
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const text = action.kind === 'text' ? action.text : '';
    const usage = usageOf(body, action.kind === 'text' ? action.text : JSON.stringify(action.arguments));
    const usageBody = {
      prompt_tokens: usage.prompt,
      completion_tokens: usage.completion,
      total_tokens: usage.prompt + usage.completion,
    };
    const toolCall =
      action.kind === 'tool'
        ? {
            index: 0,
            id: `call_${randomUUID().slice(0, 8)}`,
            type: 'function',
            function: { name: action.name, arguments: JSON.stringify(action.arguments) },
          }
        : undefined;
    const finishReason = toolCall ? 'tool_calls' : 'stop';
    if (body.stream !== true) {
      sendJson(response, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text || null,
              ...(toolCall ? { tool_calls: [toolCall] } : {}),
            },
            finish_reason: finishReason,
          },
        ],
        usage: usageBody,
      });
      return;
    }
    startSse(response);
    const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
    await writeEvent(response, chunk({ role: 'assistant', content: '' }));
    for (const piece of pieces(text)) if (text) await writeEvent(response, chunk({ content: piece }));
    if (toolCall) await writeEvent(response, chunk({ tool_calls: [toolCall] }));
    await writeEvent(response, chunk({}, finishReason));
    await writeEvent(response, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [],
      usage: usageBody,
    });
    response.end('data: [DONE]\n\n');
  }

  async function responsesStream(response: http.ServerResponse, body: Json, action: ModelAction) {
    const responseId = `resp_${randomUUID().replace(/-/g, '')}`;
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const now = Math.floor(Date.now() / 1000);
    startSse(response, {
      'x-codex-primary-used-percent': String(limits.primaryUsedPercent),
      'x-codex-primary-window-minutes': '300',
      'x-codex-primary-reset-after-seconds': '3600',
      'x-codex-primary-reset-at': String(now + 3600),
      'x-codex-secondary-used-percent': String(limits.secondaryUsedPercent),
      'x-codex-secondary-window-minutes': '10080',
      'x-codex-secondary-reset-after-seconds': '86400',
      'x-codex-secondary-reset-at': String(now + 86400),
    });
    const base = {
      id: responseId,
      object: 'response',
      created_at: now,
      model,
      status: 'in_progress',
      output: [] as unknown[],
    };
    let sequence = 0;
    const send = (type: string, data: Json) =>
      writeEvent(response, { type, sequence_number: sequence++, ...data }, type);
    await send('response.created', { response: base });
    await send('response.in_progress', { response: base });
    const output: unknown[] = [];
    const text = action.kind === 'text' ? action.text : '';
    if (action.kind === 'text') {
      const itemId = `msg_${randomUUID().slice(0, 12)}`;
      const emptyItem = {
        id: itemId,
        type: 'message',
        role: 'assistant',
        status: 'in_progress',
        content: [],
      };
      await send('response.output_item.added', { output_index: 0, item: emptyItem });
      await send('response.content_part.added', {
        output_index: 0,
        item_id: itemId,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const piece of pieces(text)) {
        await send('response.output_text.delta', {
          output_index: 0,
          item_id: itemId,
          content_index: 0,
          delta: piece,
        });
      }
      await send('response.output_text.done', { output_index: 0, item_id: itemId, content_index: 0, text });
      const part = { type: 'output_text', text, annotations: [] };
      await send('response.content_part.done', { output_index: 0, item_id: itemId, content_index: 0, part });
      const item = { id: itemId, type: 'message', role: 'assistant', status: 'completed', content: [part] };
      output.push(item);
      await send('response.output_item.done', { output_index: 0, item });
    } else {
      const itemId = `fc_${randomUUID().slice(0, 12)}`;
      const item = {
        id: itemId,
        type: 'function_call',
        status: 'completed',
        call_id: `call_${randomUUID().slice(0, 8)}`,
        name: action.name,
        arguments: JSON.stringify(action.arguments),
      };
      await send('response.output_item.added', {
        output_index: 0,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      await send('response.function_call_arguments.delta', {
        output_index: 0,
        item_id: itemId,
        delta: item.arguments,
      });
      await send('response.function_call_arguments.done', {
        output_index: 0,
        item_id: itemId,
        arguments: item.arguments,
      });
      output.push(item);
      await send('response.output_item.done', { output_index: 0, item });
    }
    const usage = usageOf(body, text || JSON.stringify(output));
    await send('response.completed', {
      response: {
        ...base,
        status: 'completed',
        output,
        usage: {
          input_tokens: usage.prompt,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: usage.completion,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.prompt + usage.completion,
        },
      },
    });
    response.end();
  }

  async function anthropicMessage(response: http.ServerResponse, body: Json, action: ModelAction) {
    const id = `msg_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const usage = usageOf(body, action.kind === 'text' ? action.text : JSON.stringify(action.arguments));
    const toolUse =
      action.kind === 'tool'
        ? {
            type: 'tool_use',
            id: `toolu_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
            name: action.name,
            input: action.arguments,
          }
        : undefined;
    const stopReason = toolUse ? 'tool_use' : 'end_turn';
    const content = toolUse ? [toolUse] : [{ type: 'text', text: action.kind === 'text' ? action.text : '' }];
    const reset = Math.floor(Date.now() / 1000) + 3 * 3600;
    const limitHeaders = {
      'anthropic-ratelimit-unified-status': 'allowed',
      'anthropic-ratelimit-unified-reset': String(reset),
      'anthropic-ratelimit-unified-5h-status': 'allowed',
      'anthropic-ratelimit-unified-5h-reset': String(reset),
      'anthropic-ratelimit-unified-5h-utilization': '0.25',
      'anthropic-ratelimit-unified-representative-claim': 'five_hour',
    };
    if (body.stream !== true) {
      sendJson(
        response,
        {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { input_tokens: usage.prompt, output_tokens: usage.completion },
        },
        200,
        limitHeaders,
      );
      return;
    }
    startSse(response, limitHeaders);
    await writeEvent(
      response,
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: usage.prompt,
            output_tokens: 1,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
          },
        },
      },
      'message_start',
    );
    if (toolUse) {
      await writeEvent(
        response,
        { type: 'content_block_start', index: 0, content_block: { ...toolUse, input: {} } },
        'content_block_start',
      );
      await writeEvent(
        response,
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(toolUse.input) },
        },
        'content_block_delta',
      );
    } else {
      const text = action.kind === 'text' ? action.text : '';
      await writeEvent(
        response,
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        'content_block_start',
      );
      for (const piece of pieces(text)) {
        await writeEvent(
          response,
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } },
          'content_block_delta',
        );
      }
    }
    await writeEvent(response, { type: 'content_block_stop', index: 0 }, 'content_block_stop');
    await writeEvent(
      response,
      {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: usage.completion },
      },
      'message_delta',
    );
    await writeEvent(response, { type: 'message_stop' }, 'message_stop');
    response.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
