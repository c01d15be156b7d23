import net from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import { echoScripter, FakeEdgeService, type Scripter } from '../test-support/fake-edge-service.js';
import { DEFAULT_MAX_SUBSCRIBERS as MAX_LISTENERS_PER_TASK } from '../service/run-registry.js';
import { startA2ASurface, type RunningA2ASurface } from './a2a-surface.js';
import { TEST_A2A_SETTINGS } from './test-support/a2a-settings.js';
import { createPrincipalResolver, type Principal } from '../governance/principal.js';

let surface: RunningA2ASurface | undefined;

afterEach(async () => {
  await surface?.close();
  surface = undefined;
});

async function start(
  bearerToken: string,
  scripter: Scripter = echoScripter,
): Promise<{ host: string; port: number }> {
  surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken,
    edgeId: 'edge-test',
    version: '0.1.0',
    settings: { ...TEST_A2A_SETTINGS, maxContexts: 10 },
    service: new FakeEdgeService(scripter),
    logger: silentLogger,
  });
  const port = Number(surface.address.slice(surface.address.lastIndexOf(':') + 1));
  return { host: '127.0.0.1', port };
}

/** Sends the headers of a large POST and only its first bytes; resolves with what came back and when. */
function partialPost(
  address: { host: string; port: number },
  headers: Record<string, string>,
  declaredBytes: number,
): Promise<{ response: string; elapsedMs: number; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(address.port, address.host);
    let response = '';
    let answeredAt = 0;
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      const lines = [
        'POST /a2a HTTP/1.1',
        `host: ${address.host}:${address.port}`,
        'content-type: application/json',
        `content-length: ${declaredBytes}`,
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      socket.write(Buffer.alloc(64 * 1024, 0x20));
    });
    socket.on('data', (chunk: string) => {
      if (answeredAt === 0) answeredAt = performance.now();
      response += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () =>
      resolve({ response, elapsedMs: (answeredAt || performance.now()) - started, closedByServer: true }),
    );
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 5 s; got ${JSON.stringify(response.slice(0, 200))}`));
    }, 5000).unref();
  });
}

describe('A2A app hostile input', () => {
  it('answers an unauthenticated 10 MiB body with 401 before reading it and closes the connection', async () => {
    const address = await start('secret-token');
    const result = await partialPost(address, {}, 10 * 1024 * 1024);
    expect(result.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(result.response.toLowerCase()).toContain('connection: close');
    expect(result.elapsedMs).toBeLessThan(1000);
    expect(result.closedByServer).toBe(true);
  });

  it('rejects a wrong token the same way', async () => {
    const address = await start('secret-token');
    const result = await partialPost(address, { authorization: 'Bearer nope' }, 10 * 1024 * 1024);
    expect(result.response).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('reads the body of an authorized request (and refuses one over the limit with 413)', async () => {
    const address = await start('secret-token');
    const result = await partialPost(address, { authorization: 'Bearer secret-token' }, 64 * 1024 * 1024);
    expect(result.response).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('refuses a contextId that could not safely name a CLI session (invalid params)', async () => {
    const address = await start('');
    for (const contextId of ['--add-dir=/', 'a b', 'x'.repeat(129), '']) {
      const response = await fetch(`http://${address.host}:${address.port}/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: 'm1',
              role: 'user',
              contextId,
              parts: [{ kind: 'text', text: 'hi' }],
            },
          },
        }),
      });
      const body = (await response.json()) as { error?: { code: number; message: string } };
      expect(body.error?.code).toBe(-32602);
      expect(body.error?.message).toMatch(/contextId/);
    }
  });

  it('refuses a resubscription over the per-task cap while the others stay open', async () => {
    // A run without a terminal part waits until it is cancelled: the task stays working.
    const address = await start('', () => ({ parts: [] }));
    const url = `http://${address.host}:${address.port}/a2a`;
    const rpc = (method: string, params: unknown, signal?: AbortSignal) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        ...(signal ? { signal } : {}),
      });
    const sent = (await (
      await rpc('message/send', {
        message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hold' }] },
        configuration: { blocking: false },
      })
    ).json()) as { result: { id: string } };
    const controller = new AbortController();
    const open: Response[] = [];
    for (let index = 0; index < MAX_LISTENERS_PER_TASK; index += 1) {
      const response = await rpc('tasks/resubscribe', { id: sent.result.id }, controller.signal);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      open.push(response);
    }
    const refused = await rpc('tasks/resubscribe', { id: sent.result.id });
    const body = (await refused.json()) as { error?: { message: string } };
    expect(body.error?.message).toMatch(/too many subscriptions/);
    controller.abort();
    await rpc('tasks/cancel', { id: sent.result.id });
  });
});

describe('A2A tasks belong to the key that created them', () => {
  const principal = (id: string): Principal => ({
    id,
    models: undefined,
    rpm: null,
    tpm: null,
    maxConcurrent: null,
    tokenBudget: null,
    weight: 1,
    priority: 'interactive',
  });

  it("answers team-a's get, cancel, resubscribe and follow-up of team's task exactly like an unknown id", async () => {
    const resolver = createPrincipalResolver({
      keys: [],
      extra: [
        { secret: 'secret-team', principal: principal('team') },
        { secret: 'secret-team-a', principal: principal('team-a') },
      ],
    });
    surface = await startA2ASurface({
      listen: '127.0.0.1:0',
      path: '/a2a',
      bearerToken: '',
      principals: () => resolver,
      edgeId: 'edge-test',
      version: '0.1.0',
      settings: { ...TEST_A2A_SETTINGS, maxContexts: 10 },
      service: new FakeEdgeService(echoScripter),
      logger: silentLogger,
    });
    const url = `http://${surface.address}/a2a`;
    const call = async (secret: string, method: string, params: Record<string, unknown>) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return (await response.json()) as {
        result?: { id: string; status: { state: string } };
        error?: { code: number; message: string };
      };
    };
    const sent = await call('secret-team', 'message/send', {
      message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hello' }] },
      configuration: { blocking: true },
    });
    const taskId = sent.result?.id as string;
    expect(sent.result?.status.state).toBe('completed');
    expect((await call('secret-team', 'tasks/get', { id: taskId })).result?.id).toBe(taskId);

    const unknown = (await call('secret-team-a', 'tasks/get', { id: 'no-such-task' })).error;
    expect(unknown?.code).toBe(-32001);
    const asUnknown = { code: -32001, message: `task ${taskId} not found` };
    expect((await call('secret-team-a', 'tasks/get', { id: taskId })).error).toEqual(asUnknown);
    expect((await call('secret-team-a', 'tasks/cancel', { id: taskId })).error).toEqual(asUnknown);
    expect((await call('secret-team-a', 'tasks/resubscribe', { id: taskId })).error).toEqual(asUnknown);
    const followUp = await call('secret-team-a', 'message/send', {
      message: {
        kind: 'message',
        messageId: 'm2',
        role: 'user',
        taskId,
        parts: [{ kind: 'text', text: 'again' }],
      },
    });
    expect(followUp.error).toEqual(asUnknown);
    // The owner is told the task is finished, and that it cannot be canceled.
    expect((await call('secret-team', 'tasks/cancel', { id: taskId })).error?.code).toBe(-32002);
  });
});
