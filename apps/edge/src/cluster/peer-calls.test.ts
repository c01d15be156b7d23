// A2A tasks and background responses across edges over a real nats-server (skipped with one printed line when it
// is missing): two A2A surfaces or two OpenAI apps whose services' run registries are joined by the cluster's run
// lookups (cluster-runs.ts over peer calls); a task or response created on one edge is read, followed and
// cancelled through the other.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FabricBus } from './fabric-bus.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { closeOpenAIApp, createOpenAIApp } from '../openai/openai-app.js';
import { harnessConfig } from '../surface-kit/test-support/surface-harness.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { FakeNodes } from '../pool/test-support/pool-fixture.js';
import { startA2ASurface, type RunningA2ASurface } from '../a2a/a2a-surface.js';
import { silentLogger } from '../logging.js';
import { FakeEdgeService, textRun, type Scripter } from '../test-support/fake-edge-service.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { createPeerCalls, PeerCallError } from './peer-calls.js';
import { createRemoteRuns, serveRuns } from './cluster-runs.js';
import { RunRegistry } from '../service/run-registry.js';
import { systemClock } from '../clock.js';
import { TEST_A2A_SETTINGS } from '../a2a/test-support/a2a-settings.js';

const available = natsServerAvailable('cluster peer-call tests');
const suite = available ? describe : describe.skip;

const settings = TEST_A2A_SETTINGS;

/** `hold` waits for a cancel; anything else is answered at once. */
const scripter: Scripter = (input) => ({
  parts: [
    { type: 'start', sessionId: input.sessionId, adapter: input.adapter, target: input.target },
    { type: 'text-delta', text: 'working' },
    ...(input.messages.at(-1)?.content === 'hold'
      ? []
      : [{ type: 'complete' as const, detail: 'stop', finishReason: 'stop', backendMs: 0 }]),
  ],
});

let nats: NatsServer;
const connections: FabricBus[] = [];
const surfaces: RunningA2ASurface[] = [];
const closers: (() => Promise<void>)[] = [];

/** An OpenAI app of one edge (its own background-response store) with peer calls to `others`. */
async function openaiEdge(edgeId: string, others: string[], hold: boolean) {
  const nc = await connectFabric(nats.url, edgeId);
  connections.push(nc);
  const config = harnessConfig();
  const nodes = new FakeNodes();
  nodes.connect('node-1');
  nodes.connect('node-2');
  const pool = createProviderPool({ config, nodes, pollIntervalMs: 50 });
  const service = new FakeEdgeService(
    () => ({ parts: hold ? textRun(['x']).slice(0, 1) : textRun(['done']) }),
    nodes.list,
    pool,
  );
  // The service's run registry, joined to the other edges' registries by the cluster's run lookups.
  const peers = createPeerCalls({ clock: systemClock, nc, edgeId, liveEdges: () => others, timeoutMs: 3000 });
  service.runRegistry = new RunRegistry({ clock: systemClock, remote: createRemoteRuns(peers) });
  const stopServing = serveRuns(peers, service.runRegistry);
  const app = createOpenAIApp({ config, service, logger: silentLogger });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await nc.flush();
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        closeOpenAIApp(app);
        stopServing();
        pool.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, service };
}

async function edge(edgeId: string, others: string[]): Promise<{ url: string; service: FakeEdgeService }> {
  const nc = await connectFabric(nats.url, edgeId);
  connections.push(nc);
  const service = new FakeEdgeService(scripter);
  const peers = createPeerCalls({ clock: systemClock, nc, edgeId, liveEdges: () => others, timeoutMs: 3000 });
  service.runRegistry = new RunRegistry({ clock: systemClock, remote: createRemoteRuns(peers) });
  const stopServing = serveRuns(peers, service.runRegistry);
  closers.push(() => {
    stopServing();
    return Promise.resolve();
  });
  const surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken: '',
    edgeId,
    version: '0.1.0',
    settings,
    service,
    logger: silentLogger,
  });
  await nc.flush();
  surfaces.push(surface);
  return { url: `http://${surface.address}/a2a`, service };
}

let rpcId = 0;
async function rpc(url: string, method: string, params: Record<string, unknown>) {
  rpcId += 1;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method, params }),
  });
  return (await response.json()) as {
    result?: { id: string; status: { state: string } };
    error?: { code: number; message: string };
  };
}

function send(url: string, text: string, blocking: boolean) {
  return rpc(url, 'message/send', {
    message: { kind: 'message', messageId: `m-${rpcId}`, role: 'user', parts: [{ kind: 'text', text }] },
    configuration: { blocking },
  });
}

suite('A2A tasks on any edge (peer calls over NATS)', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    for (const surface of surfaces.splice(0)) await surface.close();
    for (const nc of connections.splice(0)) await nc.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('reads and cancels on one edge a task another edge holds; an unknown task is not found anywhere', async () => {
    const a = await edge('edge-a', ['edge-b']);
    const b = await edge('edge-b', ['edge-a']);

    const done = await send(a.url, 'hello', true);
    const doneId = done.result?.id as string;
    expect(done.result?.status.state).toBe('completed');
    const read = await rpc(b.url, 'tasks/get', { id: doneId });
    expect(read.result).toMatchObject({ id: doneId, status: { state: 'completed' } });
    // Not cancelable on its edge: the owner's error comes back as it is.
    const late = await rpc(b.url, 'tasks/cancel', { id: doneId });
    expect(late.error?.code).toBe(-32002);

    const running = await send(a.url, 'hold', false);
    const runningId = running.result?.id as string;
    const cancelled = await rpc(b.url, 'tasks/cancel', { id: runningId });
    expect(cancelled.result).toMatchObject({ id: runningId, status: { state: 'canceled' } });
    expect(a.service.cancelled).toHaveLength(1);
    expect(b.service.submitted).toHaveLength(0);

    const missing = await rpc(b.url, 'tasks/get', { id: 'no-such-task' });
    expect(missing.error?.code).toBe(-32001);
  });

  it('resubscribes on one edge to a task another edge holds: its events are relayed until it ends', async () => {
    const a = await edge('edge-a', ['edge-b']);
    const b = await edge('edge-b', ['edge-a']);
    const running = await send(a.url, 'hold', false);
    const runningId = running.result?.id as string;
    const stream = await fetch(b.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'r',
        method: 'tasks/resubscribe',
        params: { id: runningId },
      }),
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    // The stream is open (its first event, the task, went out): cancel the task on the edge that holds it.
    const cancelled = await rpc(a.url, 'tasks/cancel', { id: runningId });
    expect(cancelled.result?.status.state).toBe('canceled');
    const events = (await stream.text())
      .split('\n\n')
      .filter((chunk) => chunk.startsWith('data: '))
      .map(
        (chunk) =>
          (
            JSON.parse(chunk.slice(6)) as {
              result: {
                kind: string;
                id?: string;
                taskId?: string;
                status: { state: string };
                final?: boolean;
              };
            }
          ).result,
      );
    expect(events[0]).toMatchObject({ kind: 'task', id: runningId });
    expect(events.at(-1)).toMatchObject({
      kind: 'status-update',
      taskId: runningId,
      status: { state: 'canceled' },
      final: true,
    });
    expect(b.service.submitted).toHaveLength(0);

    const missing = await fetch(b.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'm',
        method: 'tasks/resubscribe',
        params: { id: 'no-such-task' },
      }),
    });
    expect(((await missing.json()) as { error: { code: number } }).error.code).toBe(-32001);
  });

  it('retrieves and cancels on one edge a background response another edge holds', async () => {
    const a = await openaiEdge('edge-a', ['edge-b'], true);
    const b = await openaiEdge('edge-b', ['edge-a'], false);
    const created = await fetch(`${a.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pooled', input: 'work', background: true }),
    });
    const queued = (await created.json()) as { id: string; status: string };
    expect(queued.status).toBe('queued');
    const read = await fetch(`${b.url}/v1/responses/${queued.id}`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { id: string }).id).toBe(queued.id);
    const cancelled = await fetch(`${b.url}/v1/responses/${queued.id}/cancel`, { method: 'POST' });
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled');
    const again = await fetch(`${a.url}/v1/responses/${queued.id}`);
    expect(((await again.json()) as { status: string }).status).toBe('cancelled');
    expect(b.service.submitted).toHaveLength(0);
    expect((await fetch(`${b.url}/v1/responses/resp_missing`)).status).toBe(404);
  });

  it('never takes an edge that could not be asked for one that has none: ask and gather fail instead', async () => {
    const asker = await connectFabric(nats.url, 'edge-1');
    const holder = await connectFabric(nats.url, 'edge-2');
    connections.push(asker, holder);
    let live = ['edge-2', 'edge-silent'];
    const peers = createPeerCalls({
      clock: systemClock,
      nc: asker,
      edgeId: 'edge-1',
      liveEdges: () => live,
      timeoutMs: 300,
    });
    const holderPeers = createPeerCalls({
      clock: systemClock,
      nc: holder,
      edgeId: 'edge-2',
      liveEdges: () => ['edge-1'],
    });
    const stop = holderPeers.serve('lookup', () => Promise.resolve(undefined));
    await holder.flush();
    try {
      const failed = await peers.ask('lookup', {}).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(PeerCallError);
      expect((failed as PeerCallError).edges).toEqual(['edge-silent']);
      await expect(peers.gather('lookup', {})).rejects.toBeInstanceOf(PeerCallError);
      // Every live edge answered that it has none: none.
      live = ['edge-2'];
      expect(await peers.ask('lookup', {})).toBeUndefined();
      expect((await peers.gather('lookup', {})).size).toBe(0);
    } finally {
      stop();
    }
  });
});
