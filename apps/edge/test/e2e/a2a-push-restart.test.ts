// A2A push notifications survive an edge restart (issue 44): real `iop-edge serve` processes over one data_dir
// and a webhook server on 127.0.0.1 named in `a2a.push.allow_hosts`. A 1.0 client (the 1.x SDK without legacy
// compatibility) sends a message with a push config; the edge is SIGKILLed while the task runs; the next process
// ends the task (failed, naming the restart) and the webhook receives that terminal notification. A 0.3 client
// sets and reads a config on a task and receives its terminal Task.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeServer } from '@iop/testkit';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import {
  ClientFactory as ClientFactoryV1,
  ClientFactoryOptions as ClientFactoryOptionsV1,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV1,
} from 'a2a-sdk-v1/client';
import { Role, TaskState } from 'a2a-sdk-v1';
import { ProcessGroup, freePort, startEdgeProcess, waitUntil } from '../support/e2e-processes.js';
import { VLLM_SERVED, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';

jest.setTimeout(120_000);

interface Notification {
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;
let hook: http.Server;
let hookUrl: string;
const notifications: Notification[] = [];

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  hook = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      notifications.push({
        headers: request.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  dir = await group.tempDir('iop-e2e-push-');
  config = {
    ...fabricConfig({
      dataDir: `${dir}/data`,
      transportListen: `127.0.0.1:${await freePort()}`,
      nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
    }),
    a2a: {
      enabled: true,
      listen: '127.0.0.1:0',
      node: 'n1',
      adapter: 'vllm',
      target: VLLM_SERVED,
      push: { allow_hosts: ['127.0.0.1'], max_attempts: 5, retry_window_sec: 60 },
    },
  };
});

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
  await new Promise((resolve) => hook?.close(resolve));
});

function stateOf(notification: Notification): string {
  const body = notification.body as { status?: { state?: string }; task?: { status?: { state?: string } } };
  return body.task?.status?.state ?? body.status?.state ?? '';
}

function idOf(notification: Notification): string {
  const body = notification.body as { id?: string; task?: { id?: string } };
  return body.task?.id ?? body.id ?? '';
}

describe('A2A push notifications across edge restarts', () => {
  it('delivers the terminal notification of a task whose edge was SIGKILLed, after the restart', async () => {
    const first = await startEdgeProcess(group, dir, config, 'edge-1');
    await startFabricNode(group, first, { retryIntervalMs: 300, maxRetries: 1000 });
    vllm.setBehavior({ tokenCount: 4000, tokenDelayMs: 20 });
    const client = await new ClientFactoryV1(
      ClientFactoryOptionsV1.createFrom(ClientFactoryOptionsV1.default, {
        transports: [new JsonRpcTransportFactoryV1({})],
      }),
    ).createFromUrl(`http://${first.addresses.a2a}`);
    let response: Awaited<ReturnType<typeof client.sendMessage>> | undefined;
    await waitUntil(
      async () => {
        try {
          response = await client.sendMessage({
            tenant: '',
            message: {
              messageId: 'm-push-1',
              contextId: '',
              taskId: '',
              role: Role.ROLE_USER,
              parts: [
                {
                  content: { $case: 'text', value: 'slow' },
                  metadata: undefined,
                  filename: '',
                  mediaType: '',
                },
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
                id: 'hook-1',
                taskId: '',
                url: hookUrl,
                token: 'e2e-token',
                authentication: undefined,
              },
            },
            metadata: undefined,
          });
          return true;
        } catch {
          return false; // the node is not registered yet
        }
      },
      20_000,
      () => `task accepted\n${first.describe()}`,
    );
    const taskId = response && 'id' in response ? response.id : '';
    expect(taskId).not.toBe('');
    await waitUntil(
      async () =>
        (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state ===
        TaskState.TASK_STATE_WORKING,
      15_000,
      'task working',
    );
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    expect(
      notifications.filter((entry) => idOf(entry) === taskId && stateOf(entry) === 'TASK_STATE_FAILED'),
    ).toEqual([]);
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });

    const restartedAt = Date.now();
    const second = await startEdgeProcess(group, dir, config, 'edge-2');
    await waitUntil(
      () =>
        Promise.resolve(
          notifications.some((entry) => idOf(entry) === taskId && stateOf(entry) === 'TASK_STATE_FAILED'),
        ),
      10_000,
      () => `terminal notification after the restart: ${JSON.stringify(notifications)}\n${second.describe()}`,
    );
    const terminal = notifications.find(
      (entry) => idOf(entry) === taskId && stateOf(entry) === 'TASK_STATE_FAILED',
    );
    expect(terminal?.headers['x-a2a-notification-token']).toBe('e2e-token');
    expect(terminal?.headers['content-type']).toBe('application/a2a+json');
    expect(JSON.stringify(terminal?.body)).toContain('edge_restarted');
    process.stdout.write(
      `[e2e push] terminal notification ${Date.now() - restartedAt} ms after the restart began\n`,
    );

    // 0.3: set and get a config on a task of the restarted edge (the node reconnected); its terminal Task reaches
    // the webhook.
    const legacy = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({})],
      }),
    ).createFromUrl(`http://${second.addresses.a2a}`);
    let task: { kind: string; id: string } | undefined;
    await waitUntil(
      async () => {
        try {
          task = (await legacy.sendMessage({
            message: {
              kind: 'message',
              messageId: 'm-push-2',
              role: 'user',
              parts: [{ kind: 'text', text: 'hi' }],
            },
            configuration: { blocking: false },
          })) as { kind: string; id: string };
          return true;
        } catch {
          return false;
        }
      },
      20_000,
      () => `0.3 task accepted\n${second.describe()}`,
    );
    const legacyId = task?.id ?? '';
    await legacy.setTaskPushNotificationConfig({
      taskId: legacyId,
      pushNotificationConfig: { id: 'hook-2', url: hookUrl, token: 'legacy-token' },
    });
    const got = await legacy.getTaskPushNotificationConfig({ id: legacyId });
    expect(got).toMatchObject({ taskId: legacyId, pushNotificationConfig: { id: 'hook-2', url: hookUrl } });
    await waitUntil(
      () =>
        Promise.resolve(
          notifications.some((entry) => idOf(entry) === legacyId && stateOf(entry) === 'completed'),
        ),
      15_000,
      () => `0.3 terminal notification: ${JSON.stringify(notifications.map(idOf))}\n${second.describe()}`,
    );
    const legacyTerminal = notifications.find(
      (entry) => idOf(entry) === legacyId && stateOf(entry) === 'completed',
    );
    expect(legacyTerminal?.body).toMatchObject({ kind: 'task', id: legacyId });
    expect(legacyTerminal?.headers['x-a2a-notification-token']).toBe('legacy-token');
    await second.stop('SIGTERM');
  });
});
