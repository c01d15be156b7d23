import { afterEach, describe, expect, it } from '@jest/globals';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from 'a2a-sdk-v1/client';
import { Role, TaskState, type Message as V1SdkMessage, type Task as V1SdkTask } from 'a2a-sdk-v1';
import { createPrincipalResolver, type Principal } from '../../governance/principal.js';
import { silentLogger } from '../../logging.js';
import { echoScripter, FakeEdgeService } from '../../test-support/fake-edge-service.js';
import { startA2ASurface, type RunningA2ASurface } from '../a2a-surface.js';
import { TEST_A2A_SETTINGS } from '../test-support/a2a-settings.js';

let surface: RunningA2ASurface | undefined;

afterEach(async () => {
  await surface?.close();
  surface = undefined;
});

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

/** An edge with two keys (team-a, team-b); returns its base URL. */
async function start(service: FakeEdgeService): Promise<string> {
  const resolver = createPrincipalResolver({
    keys: [],
    extra: [
      { secret: 'secret-a', principal: principal('team-a') },
      { secret: 'secret-b', principal: principal('team-b') },
    ],
  });
  surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken: '',
    principals: () => resolver,
    edgeId: 'edge-test',
    version: '0.1.0',
    settings: TEST_A2A_SETTINGS,
    service,
    logger: silentLogger,
  });
  return `http://${surface.address}`;
}

/** The 1.x SDK client as a 1.0 client: no legacy compatibility in the card resolver or the transport. */
async function v1Client(baseUrl: string, secret: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${secret}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  return factory.createFromUrl(baseUrl);
}

function message(text: string, contextId = ''): V1SdkMessage {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function send(text: string, returnImmediately = false) {
  return {
    tenant: '',
    message: message(text),
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

function asTask(result: V1SdkTask | V1SdkMessage): V1SdkTask {
  if (!('status' in result)) throw new Error('expected a task');
  return result;
}

function outputText(task: V1SdkTask): string {
  return task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

async function rpc(baseUrl: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer secret-a', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  });
  return (await response.json()) as {
    result?: Record<string, unknown>;
    error?: { code: number; message: string };
  };
}

describe('A2A 1.0 JSON-RPC (the 1.x SDK without legacy compatibility)', () => {
  it('picks the 1.0 interface of the card and sends a blocking message', async () => {
    const service = new FakeEdgeService(echoScripter);
    const a2a = await v1Client(await start(service), 'secret-a');
    expect(a2a.protocolVersion).toBe('1.0');
    const task = asTask(await a2a.sendMessage(send('hello v1')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(outputText(task)).toBe('echo: hello v1');
    expect(task.history.map((entry) => entry.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
    expect(service.submitted[0]).toMatchObject({ adapter: 'cli', target: 'fake-cli' });
  });

  it('streams the task, artifact chunks and the terminal status', async () => {
    const a2a = await v1Client(await start(new FakeEdgeService(echoScripter)), 'secret-a');
    const cases: string[] = [];
    let text = '';
    let last: TaskState | undefined;
    for await (const event of a2a.sendMessageStream(send('stream me'))) {
      const payload = event.payload;
      if (!payload) continue;
      cases.push(payload.$case);
      if (payload.$case === 'artifactUpdate') {
        text += payload.value.artifact?.parts
          .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
          .join('');
      }
      if (payload.$case === 'statusUpdate') last = payload.value.status?.state;
    }
    expect(cases[0]).toBe('task');
    expect(cases).toContain('artifactUpdate');
    expect(text).toBe('echo: stream me');
    expect(last).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('gets a task, lists only the caller’s own tasks, and cancels a running one', async () => {
    const baseUrl = await start(
      new FakeEdgeService((input) =>
        JSON.stringify(input.messages).includes('forever')
          ? { parts: [{ type: 'text-delta', text: 'working...' }] }
          : echoScripter(input),
      ),
    );
    const teamA = await v1Client(baseUrl, 'secret-a');
    const teamB = await v1Client(baseUrl, 'secret-b');
    const first = asTask(await teamA.sendMessage(send('first')));
    const second = asTask(await teamA.sendMessage(send('second')));
    const other = asTask(await teamB.sendMessage(send('not yours')));

    const got = await teamA.getTask({ tenant: '', id: first.id, historyLength: 1 });
    expect(got.id).toBe(first.id);
    expect(got.history).toHaveLength(1);
    await expect(teamB.getTask({ tenant: '', id: first.id })).rejects.toThrow(/not found/);

    const listRequest = {
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    };
    const listed = await teamA.listTasks(listRequest);
    expect(listed.tasks.map((task) => task.id)).toEqual([second.id, first.id]);
    expect(listed.totalSize).toBe(2);
    expect(listed.tasks[0]?.artifacts).toEqual([]);
    const theirs = await teamB.listTasks(listRequest);
    expect(theirs.tasks.map((task) => task.id)).toEqual([other.id]);

    const paged = await teamA.listTasks({ ...listRequest, pageSize: 1, includeArtifacts: true });
    expect(paged.tasks.map((task) => task.id)).toEqual([second.id]);
    expect(outputText(paged.tasks[0])).toBe('echo: second');
    const next = await teamA.listTasks({ ...listRequest, pageSize: 1, pageToken: paged.nextPageToken });
    expect(next.tasks.map((task) => task.id)).toEqual([first.id]);
    expect(next.nextPageToken).toBe('');

    const running = asTask(await teamA.sendMessage(send('run forever', true)));
    expect(running.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED);
    const working = await teamA.listTasks({ ...listRequest, status: TaskState.TASK_STATE_WORKING });
    expect(working.tasks.map((task) => task.id)).toEqual([running.id]);
    await expect(teamB.cancelTask({ tenant: '', id: running.id, metadata: undefined })).rejects.toThrow(
      /not found/,
    );
    const canceled = await teamA.cancelTask({ tenant: '', id: running.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(teamA.cancelTask({ tenant: '', id: running.id, metadata: undefined })).rejects.toThrow(
      /cannot be canceled/,
    );
  });

  it('resubscribes to a running task with SubscribeToTask', async () => {
    const a2a = await v1Client(await start(new FakeEdgeService(echoScripter)), 'secret-a');
    const task = asTask(await a2a.sendMessage(send('later', true)));
    const states: TaskState[] = [];
    for await (const event of a2a.resubscribeTask({ tenant: '', id: task.id })) {
      const payload = event.payload;
      if (payload?.$case === 'task') states.push(payload.value.status?.state ?? TaskState.UNRECOGNIZED);
      if (payload?.$case === 'statusUpdate')
        states.push(payload.value.status?.state ?? TaskState.UNRECOGNIZED);
    }
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('chooses the version by method name and A2A-Version header, and accepts a tenant', async () => {
    const baseUrl = await start(new FakeEdgeService(echoScripter));
    const v1Message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };
    const sent = await rpc(baseUrl, 'SendMessage', { tenant: 'anything', message: v1Message });
    expect(sent.result?.['task']).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' } });
    const legacy = await rpc(baseUrl, 'message/send', {
      message: { kind: 'message', messageId: 'm2', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
    });
    expect(legacy.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    // One engine: the 0.3 task is read and listed through 1.0.
    const legacyId = String(legacy.result?.['id']);
    expect((await rpc(baseUrl, 'GetTask', { id: legacyId })).result).toMatchObject({
      id: legacyId,
      status: { state: 'TASK_STATE_COMPLETED' },
    });
    const listed = (await rpc(baseUrl, 'ListTasks', {})).result?.['tasks'] as { id: string }[];
    expect(listed.map((task) => task.id)).toContain(legacyId);
    expect((await rpc(baseUrl, 'GetTask', { id: 'x' }, { 'a2a-version': '2.0' })).error?.code).toBe(-32009);
    expect((await rpc(baseUrl, 'tasks/get', { id: 'x' }, { 'a2a-version': '1.0' })).error?.code).toBe(-32601);
    expect((await rpc(baseUrl, 'GetTask', { id: 'x' }, { 'a2a-version': '0.3' })).error?.code).toBe(-32601);
    expect((await rpc(baseUrl, 'GetTask', { id: 'x' }, { 'a2a-version': '1.0' })).error?.code).toBe(-32001);
    expect((await rpc(baseUrl, 'ListTasks', { pageSize: 0 })).error?.code).toBe(-32602);
    expect((await rpc(baseUrl, 'ListTasks', { status: 'DONE' })).error?.code).toBe(-32602);
  });

  it('serves one card declaring both versions', async () => {
    const baseUrl = await start(new FakeEdgeService());
    const card = (await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(card['protocolVersion']).toBe('0.3.0');
    expect(card['url']).toBe(`${baseUrl}/a2a`);
    expect(card['supportedInterfaces']).toEqual([
      { url: `${baseUrl}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${baseUrl}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card['securityRequirements']).toEqual([{ schemes: { bearer: { list: [] } } }]);
  });
});
