import { afterEach, describe, expect, it } from '@jest/globals';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import type { Task as SdkTask } from '@a2a-js/sdk';
import {
  ClientFactory as ClientFactoryV1,
  ClientFactoryOptions as ClientFactoryOptionsV1,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV1,
} from 'a2a-sdk-v1/client';
import { Role, TaskState } from 'a2a-sdk-v1';
import { silentLogger } from '../logging.js';
import { ServiceError } from '../service/errors.js';
import { echoScripter, FakeEdgeService } from '../test-support/fake-edge-service.js';
import { startA2ASurface, type RunningA2ASurface } from './a2a-surface.js';
import type { A2ASettings } from './task-manager.js';
import { TEST_A2A_SETTINGS } from './test-support/a2a-settings.js';
import { portOf, rawHttpRequest } from '../test-support/raw-http-request.js';

const settings = TEST_A2A_SETTINGS;

let surface: RunningA2ASurface | undefined;

afterEach(async () => {
  await surface?.close();
  surface = undefined;
});

async function start(service: FakeEdgeService, bearerToken = '', overrides: Partial<A2ASettings> = {}) {
  surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken,
    edgeId: 'edge-test',
    version: '0.1.0',
    settings: { ...settings, ...overrides },
    service,
    logger: silentLogger,
  });
  return `http://${surface.address}`;
}

function withToken(token: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

async function client(baseUrl: string, fetchImpl?: typeof fetch): Promise<Client> {
  const options = fetchImpl
    ? ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
      })
    : ClientFactoryOptions.default;
  return new ClientFactory(options).createFromUrl(baseUrl);
}

function userMessage(text: string, contextId?: string) {
  return {
    kind: 'message' as const,
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    role: 'user' as const,
    parts: [{ kind: 'text' as const, text }],
    ...(contextId ? { contextId } : {}),
  };
}

function outputText(task: SdkTask): string {
  return (task.artifacts ?? [])
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.kind === 'text' ? part.text : ''))
    .join('');
}

async function rpc(baseUrl: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('A2A surface', () => {
  it('answers only requests naming it: its address, its public_url and allowed_hosts (421 otherwise, before the token)', async () => {
    const service = new FakeEdgeService();
    surface = await startA2ASurface({
      listen: '127.0.0.1:0',
      path: '/a2a',
      bearerToken: 'a2a-secret',
      edgeId: 'edge-test',
      version: '0.1.0',
      publicUrl: 'https://agents.example.com/a2a',
      allowedHosts: ['proxy.internal:8443'],
      settings,
      service,
      logger: silentLogger,
    });
    const port = portOf(surface.address);
    const card = (host: string) => rawHttpRequest(port, 'GET', '/.well-known/agent-card.json', { host });
    expect((await card(`rebind.evil.example:${port}`)).status).toBe(421);
    expect((await card('proxy.internal:8444')).status).toBe(421);
    for (const host of [`127.0.0.1:${port}`, 'agents.example.com', 'proxy.internal:8443']) {
      expect((await card(host)).status).toBe(200);
    }
    // Refused before the bearer token is looked at: a wrong token still reads 421, not 401.
    const send = await rawHttpRequest(
      port,
      'POST',
      '/a2a',
      {
        host: `rebind.evil.example:${port}`,
        'content-type': 'application/json',
        authorization: 'Bearer wrong',
      },
      '{}',
    );
    expect(send.status).toBe(421);
  });

  it('serves the agent card at both well-known paths', async () => {
    const baseUrl = await start(new FakeEdgeService());
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      const card = (await (await fetch(baseUrl + path)).json()) as Record<string, unknown>;
      expect(card).toMatchObject({
        name: 'IOP edge edge-test',
        url: `${baseUrl}/a2a`,
        protocolVersion: '0.3.0',
        capabilities: { streaming: true },
        defaultInputModes: expect.any(Array),
        defaultOutputModes: expect.any(Array),
        skills: [{ id: 'cli:fake-cli', name: 'fake-cli', tags: ['cli', 'fake-cli'] }],
      });
      expect(card['securitySchemes']).toBeUndefined();
    }
  });

  it('blocking message/send returns the completed task with the output artifact and history', async () => {
    const service = new FakeEdgeService();
    const a2a = await client(await start(service));
    const result = await a2a.sendMessage({ message: userMessage('hello there') });
    expect(result.kind).toBe('task');
    const task = result as SdkTask;
    expect(task.status.state).toBe('completed');
    expect(outputText(task)).toBe('echo: hello there');
    expect(task.history?.map((message) => message.role)).toEqual(['user', 'agent']);
    expect(service.submitted[0]).toMatchObject({ adapter: 'cli', target: 'fake-cli' });
    expect(service.submitted[0]?.sessionId).toBe(`a2a-${task.contextId}`);
    // The caller waits for the whole answer: the node may fetch it from the backend in one piece.
    expect(service.submitted[0]?.collect).toBe(true);
  });

  it('non-blocking send returns a working task at once; tasks/get later shows it completed', async () => {
    const service = new FakeEdgeService(() => ({
      delayMs: 50,
      parts: [
        { type: 'text-delta', text: 'slow answer' },
        { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
      ],
    }));
    const a2a = await client(await start(service));
    const first = (await a2a.sendMessage({
      message: userMessage('take your time'),
      configuration: { blocking: false },
    })) as SdkTask;
    expect(['submitted', 'working']).toContain(first.status.state);
    let task = first;
    for (let attempt = 0; attempt < 50 && task.status.state !== 'completed'; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      task = await a2a.getTask({ id: first.id });
    }
    expect(task.status.state).toBe('completed');
    expect(outputText(task)).toBe('slow answer');
    // A working task can be followed (tasks/resubscribe) as it streams.
    expect(service.submitted[0]?.collect).toBeUndefined();
    const trimmed = await a2a.getTask({ id: first.id, historyLength: 1 });
    expect(trimmed.history).toHaveLength(1);
    expect(trimmed.history?.[0]?.role).toBe('agent');
  });

  it('cancels a running task on the node and refuses to cancel a finished one', async () => {
    const service = new FakeEdgeService(() => ({ parts: [{ type: 'text-delta', text: 'working...' }] }));
    const a2a = await client(await start(service));
    const running = (await a2a.sendMessage({
      message: userMessage('run forever'),
      configuration: { blocking: false },
    })) as SdkTask;
    await new Promise((resolve) => setTimeout(resolve, 30));
    const canceled = await a2a.cancelTask({ id: running.id });
    expect(canceled.status.state).toBe('canceled');
    expect(service.cancelled).toHaveLength(1);
    await expect(a2a.cancelTask({ id: running.id })).rejects.toThrow(/cannot be canceled/);
  });

  it('answers TaskNotFound (-32001) and TaskNotCancelable (-32002) as JSON-RPC errors', async () => {
    const baseUrl = await start(new FakeEdgeService());
    const missing = await rpc(
      baseUrl,
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { id: 'x' } }),
    );
    expect(missing.json).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32001, message: 'task x not found' },
    });
    const sent = await rpc(
      baseUrl,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'message/send',
        params: { message: userMessage('hi') },
      }),
    );
    const taskId = (sent.json['result'] as { id: string }).id;
    const cancel = await rpc(
      baseUrl,
      JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tasks/cancel', params: { id: taskId } }),
    );
    expect((cancel.json['error'] as { code: number }).code).toBe(-32002);
  });

  it('maps malformed requests to -32700, -32600, -32601 and -32602', async () => {
    const baseUrl = await start(new FakeEdgeService());
    expect((await rpc(baseUrl, '{not json')).json).toMatchObject({ id: null, error: { code: -32700 } });
    expect((await rpc(baseUrl, '[]')).json).toMatchObject({ error: { code: -32600 } });
    expect((await rpc(baseUrl, JSON.stringify({ jsonrpc: '1.0', id: 3, method: 'x' }))).json).toMatchObject({
      id: 3,
      error: { code: -32600 },
    });
    expect(
      (await rpc(baseUrl, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'nope' }))).json,
    ).toMatchObject({
      id: 4,
      error: { code: -32601 },
    });
    const badParams = await rpc(
      baseUrl,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 5,
        method: 'message/send',
        params: { message: { role: 'user' } },
      }),
    );
    expect(badParams.json).toMatchObject({ id: 5, error: { code: -32602 } });
  });

  it('streams the task, artifact chunks and a final status update', async () => {
    const service = new FakeEdgeService(() => ({
      delayMs: 5,
      parts: [
        { type: 'text-delta', text: 'one ' },
        { type: 'text-delta', text: 'two' },
        { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
      ],
    }));
    const a2a = await client(await start(service));
    const kinds: string[] = [];
    let text = '';
    let final = false;
    for await (const event of a2a.sendMessageStream({ message: userMessage('stream please') })) {
      kinds.push(event.kind);
      if (event.kind === 'artifact-update') {
        text += event.artifact.parts.map((part) => (part.kind === 'text' ? part.text : '')).join('');
      }
      if (event.kind === 'status-update' && event.final) {
        final = true;
        expect(event.status.state).toBe('completed');
      }
    }
    expect(kinds[0]).toBe('task');
    expect(kinds).toContain('artifact-update');
    expect(text).toBe('one two');
    expect(final).toBe(true);
    expect(service.submitted[0]?.collect).toBeUndefined();
  });

  it('resubscribes to a running task and sees it finish', async () => {
    const service = new FakeEdgeService(() => ({
      delayMs: 40,
      parts: [
        { type: 'text-delta', text: 'later' },
        { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
      ],
    }));
    const a2a = await client(await start(service));
    const task = (await a2a.sendMessage({
      message: userMessage('x'),
      configuration: { blocking: false },
    })) as SdkTask;
    const states: string[] = [];
    for await (const event of a2a.resubscribeTask({ id: task.id })) {
      if (event.kind === 'status-update') states.push(event.status.state);
    }
    expect(states.at(-1)).toBe('completed');
  });

  it('continues the same session on the same node for a follow-up in the same context', async () => {
    const service = new FakeEdgeService();
    const a2a = await client(await start(service));
    const first = (await a2a.sendMessage({ message: userMessage('first') })) as SdkTask;
    const second = (await a2a.sendMessage({ message: userMessage('second', first.contextId) })) as SdkTask;
    expect(second.contextId).toBe(first.contextId);
    expect(service.submitted[1]?.sessionId).toBe(service.submitted[0]?.sessionId);
    expect(service.submitted[1]?.node).toBe('node-a');
    const other = (await a2a.sendMessage({ message: userMessage('elsewhere') })) as SdkTask;
    expect(other.contextId).not.toBe(first.contextId);
    expect(service.submitted[2]?.sessionId).not.toBe(service.submitted[0]?.sessionId);
  });

  // Admission happens before message/send answers for an idle context: a refusal is the caller's JSON-RPC error
  // (-32051 unavailable, with Retry-After) and no task is created, rather than a failed task.
  it('answers a JSON-RPC unavailable error and creates no task when no node can take the run', async () => {
    const service = new FakeEdgeService(echoScripter, () => []);
    const baseUrl = await start(service);
    const a2a = await client(baseUrl);
    await expect(a2a.sendMessage({ message: userMessage('anyone?') })).rejects.toThrow(
      /no node is connected \(Code: -32051\)/,
    );
    const response = await fetch(`${baseUrl}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: userMessage('anyone?') },
      }),
    });
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32051,
        message: 'no node is connected',
        data: { code: 'no_nodes', httpStatus: 503, retryAfterSeconds: 1 },
      },
    });
    expect(service.submitted).toHaveLength(0);
  });

  it('fails a follow-up task whose turn came after its context was busy when admission refuses it then', async () => {
    const service = new FakeEdgeService((input) =>
      input.messages.at(-1)?.content === 'second'
        ? { parts: [], submitError: new ServiceError('node_disconnected', 'node node-a disconnected') }
        : {
            delayMs: 40,
            parts: [
              { type: 'text-delta', text: 'first answer' },
              { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
            ],
          },
    );
    const a2a = await client(await start(service));
    const first = (await a2a.sendMessage({
      message: userMessage('first'),
      configuration: { blocking: false },
    })) as SdkTask;
    // Same context while the first turn runs: accepted as a task, admitted only when its turn comes.
    const second = (await a2a.sendMessage({
      message: userMessage('second', first.contextId),
      configuration: { blocking: false },
    })) as SdkTask;
    expect(second.contextId).toBe(first.contextId);
    let task = second;
    for (let attempt = 0; attempt < 100 && task.status.state !== 'failed'; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      task = await a2a.getTask({ id: second.id });
    }
    expect(task.status.state).toBe('failed');
    expect(task.status.message?.parts[0]).toMatchObject({
      kind: 'text',
      text: 'node_disconnected: node node-a disconnected',
    });
    expect((await a2a.getTask({ id: first.id })).status.state).toBe('completed');
  });

  it('requires the bearer token when one is configured; the card stays public and names the scheme', async () => {
    const baseUrl = await start(new FakeEdgeService(), 'secret-token');
    const card = (await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(card['securitySchemes']).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } });
    expect((await rpc(baseUrl, body)).status).toBe(401);
    expect((await rpc(baseUrl, body, { authorization: 'Bearer wrong' })).status).toBe(401);
    const a2a = await client(baseUrl, withToken('secret-token'));
    const task = (await a2a.sendMessage({ message: userMessage('authorized') })) as SdkTask;
    expect(task.status.state).toBe('completed');
  });

  it('works with the 1.x SDK client in legacy-compat mode', async () => {
    const baseUrl = await start(new FakeEdgeService());
    const factory = new ClientFactoryV1(
      ClientFactoryOptionsV1.createFrom(ClientFactoryOptionsV1.default, {
        transports: [new JsonRpcTransportFactoryV1({ legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      }),
    );
    const a2a = await factory.createFromUrl(baseUrl);
    const result = await a2a.sendMessage({
      tenant: '',
      message: {
        messageId: 'v1-message',
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          { content: { $case: 'text', value: 'from v1' }, metadata: undefined, filename: '', mediaType: '' },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
