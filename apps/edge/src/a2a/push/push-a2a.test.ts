// Push notifications through the A2A surface in-process: the official 0.3 and 1.0 clients register webhook
// configs, the edge POSTs the terminal task to a webhook server on 127.0.0.1 (named in allow_hosts), another key
// sees "task not found", and a URL the target check refuses is refused when the config is set.
import { afterEach, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import {
  ClientFactory as ClientFactoryV1,
  ClientFactoryOptions as ClientFactoryOptionsV1,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV1,
} from 'a2a-sdk-v1/client';
import { Role } from 'a2a-sdk-v1';
import { createPrincipalResolver, unlimitedPrincipal } from '../../governance/principal.js';
import { silentLogger } from '../../logging.js';
import { FakeEdgeService } from '../../test-support/fake-edge-service.js';
import { startA2ASurface, type RunningA2ASurface } from '../a2a-surface.js';
import { TEST_A2A_SETTINGS } from '../test-support/a2a-settings.js';
import { MemoryPushStore } from '../test-support/memory-push-store.js';
import type { PushDeliveryResult } from './push-metrics.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

let surface: RunningA2ASurface | undefined;
const servers: http.Server[] = [];

afterEach(async () => {
  await surface?.close();
  surface = undefined;
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function webhook(): Promise<{ url: string; received: Received[]; next: () => Promise<Received> }> {
  const received: Received[] = [];
  const waiters: ((value: Received) => void)[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = {
        headers: request.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
      };
      received.push(entry);
      response.writeHead(200).end();
      waiters.shift()?.(entry);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    next: () => {
      const done = received.find((entry) => isTerminal(entry.body));
      if (done) return Promise.resolve(done);
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

function isTerminal(body: unknown): boolean {
  const record = body as { status?: { state?: string }; task?: { status?: { state?: string } } };
  const state = record.status?.state ?? record.task?.status?.state ?? '';
  return ['completed', 'failed', 'canceled', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'].includes(state);
}

async function start(allowHosts: string[]): Promise<{ baseUrl: string; counts: Record<string, number> }> {
  const counts: Record<string, number> = {};
  const keys = createPrincipalResolver({
    keys: [],
    extra: [
      { secret: 'key-a', principal: unlimitedPrincipal('a') },
      { secret: 'key-b', principal: unlimitedPrincipal('b') },
    ],
  });
  surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken: '',
    principals: () => keys,
    edgeId: 'edge-test',
    version: '0.1.0',
    settings: TEST_A2A_SETTINGS,
    service: new FakeEdgeService(),
    logger: silentLogger,
    push: {
      settings: { allowHosts, maxAttempts: 3, retryWindowMs: 60_000, timeoutMs: 5_000 },
      store: new MemoryPushStore(),
      metrics: {
        delivery: (result: PushDeliveryResult) => {
          counts[result] = (counts[result] ?? 0) + 1;
        },
      },
    },
  });
  return { baseUrl: `http://${surface.address}`, counts };
}

function withKey(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

async function rpc(
  baseUrl: string,
  key: string,
  method: string,
  params: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Record<string, unknown>;
}

const message = (text: string) => ({
  kind: 'message' as const,
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  role: 'user' as const,
  parts: [{ kind: 'text' as const, text }],
});

describe('A2A push notifications', () => {
  it('0.3: set/get/list a config, the webhook gets the terminal Task with the token; other keys see no task', async () => {
    const hook = await webhook();
    const { baseUrl, counts } = await start(['127.0.0.1']);
    const card = (await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).json()) as {
      capabilities: { pushNotifications: boolean };
    };
    expect(card.capabilities.pushNotifications).toBe(true);
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: withKey('key-a') })],
      }),
    ).createFromUrl(baseUrl);
    const task = await client.sendMessage({ message: message('hello'), configuration: { blocking: false } });
    if (task.kind !== 'task') throw new Error('expected a task');
    const set = await client.setTaskPushNotificationConfig({
      taskId: task.id,
      pushNotificationConfig: { id: 'c1', url: hook.url, token: 'secret-token' },
    });
    expect(set.pushNotificationConfig).toMatchObject({ id: 'c1', url: hook.url });
    const got = await client.getTaskPushNotificationConfig({ id: task.id });
    expect(got.pushNotificationConfig.url).toBe(hook.url);
    expect(await client.listTaskPushNotificationConfig({ id: task.id })).toHaveLength(1);

    const delivered = await hook.next();
    expect(delivered.headers['x-a2a-notification-token']).toBe('secret-token');
    expect(delivered.body).toMatchObject({ kind: 'task', id: task.id, status: { state: 'completed' } });
    expect(counts['delivered']).toBeGreaterThanOrEqual(1);

    const other = await rpc(baseUrl, 'key-b', 'tasks/pushNotificationConfig/list', { id: task.id });
    expect(other['error']).toMatchObject({ code: -32001 });
    const deleted = await rpc(baseUrl, 'key-a', 'tasks/pushNotificationConfig/delete', {
      id: task.id,
      pushNotificationConfigId: 'c1',
    });
    expect(deleted['result']).toBeNull();
  });

  it('1.0: SendMessage with a push config delivers a StreamResponse with Authorization', async () => {
    const hook = await webhook();
    const { baseUrl } = await start(['127.0.0.1']);
    const client = await new ClientFactoryV1(
      ClientFactoryOptionsV1.createFrom(ClientFactoryOptionsV1.default, {
        transports: [new JsonRpcTransportFactoryV1({ fetchImpl: withKey('key-a') })],
      }),
    ).createFromUrl(baseUrl);
    const response = await client.sendMessage({
      tenant: '',
      message: {
        messageId: 'm-1',
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          { content: { $case: 'text', value: 'hi' }, metadata: undefined, filename: '', mediaType: '' },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: {
        acceptedOutputModes: [],
        returnImmediately: true,
        taskPushNotificationConfig: {
          tenant: '',
          id: '',
          taskId: '',
          url: hook.url,
          token: 'tok-1',
          authentication: { scheme: 'Bearer', credentials: 'hook-secret' },
        },
      },
      metadata: undefined,
    });
    const taskId = 'id' in response ? response.id : '';
    const delivered = await hook.next();
    expect(delivered.headers['authorization']).toBe('Bearer hook-secret');
    expect(delivered.headers['content-type']).toBe('application/a2a+json');
    expect(delivered.body).toMatchObject({ task: { id: taskId, status: { state: 'TASK_STATE_COMPLETED' } } });
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.url)).toEqual([hook.url]);
  });

  it('refuses a loopback webhook not named in allow_hosts when the config is set', async () => {
    const hook = await webhook();
    const { baseUrl, counts } = await start([]);
    const answer = await rpc(baseUrl, 'key-a', 'message/send', {
      message: message('x'),
      configuration: { pushNotificationConfig: { url: hook.url } },
    });
    expect(answer['error']).toMatchObject({ code: -32602 });
    expect(String((answer['error'] as { message: string }).message)).toContain('allow_hosts');
    expect(counts['refused']).toBe(1);
  });
});
