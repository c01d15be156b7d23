import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  create,
  encodeFrame,
  envelope as build,
  FrameDecoder,
  RegisterRejectCode,
  toWireRunEvent,
  type Envelope,
} from '@iop/wire';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import type { EdgeEvent, EdgeNodeEvent } from '../events/types.js';
import { createNodeRegistry, type NodeRegistry } from '../node/node-registry.js';
import { createNodeStore, type NodeStore } from '../node/node-store.js';
import { testEdgeConfig, testNode } from '../node/test-support/config-fixture.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { createEdgeService } from '../service/edge-service.js';
import { startNodeTransport } from '../node/node-transport.js';
import type { EdgeTransport } from './edge-transport.js';
import {
  connectFakeNode,
  connectSocket,
  recordingLogger,
  waitUntil,
  type LogEntry,
} from './test-support/fake-node.js';

interface Harness {
  transport: EdgeTransport;
  registry: NodeRegistry;
  store: NodeStore;
  bus: ClosableEventBus;
  nodeEvents: EdgeNodeEvent[];
  logs: LogEntry[];
  tokens: Map<string, string>;
}

let dataDir: string;
let harness: Harness | undefined;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'iop-transport-'));
});

afterEach(async () => {
  await harness?.transport.stop();
  harness?.bus.close();
  harness = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

async function start(
  edge: Partial<ReturnType<typeof testEdgeConfig>['edge']> = {},
  extra: { maxFrameBytes?: number; maxPendingConnections?: number } = {},
): Promise<Harness> {
  const config = testEdgeConfig({
    edge: { data_dir: dataDir, ...edge },
    nodes: [testNode(), testNode({ id: 'dev-node', alias: 'dev', token: 'iop_dev_token' })],
  });
  const store = createNodeStore({ dataDir, configNodes: config.nodes });
  const tokens = new Map<string, string>();
  tokens.set('test-node', (await store.register('test-node')).token);
  tokens.set('store-only', (await store.register('store-only')).token);
  tokens.set('dev-node', 'iop_dev_token');
  const registry = createNodeRegistry();
  const bus = createEventBus({ replaySize: 100, queueSize: 100 });
  const nodeEvents: EdgeNodeEvent[] = [];
  const subscription = bus.subscribe();
  void (async () => {
    for await (const event of subscription as AsyncIterable<EdgeEvent>) {
      if (event.type === 'node') nodeEvents.push(event.event);
    }
  })();
  const logger = recordingLogger();
  const transport = await startNodeTransport({
    config,
    store,
    registry,
    events: bus,
    logger,
    closeTimeoutMs: 200,
    ...extra,
  });
  harness = { transport, registry, store, bus, nodeEvents, logs: logger.entries, tokens };
  return harness;
}

function token(h: Harness, nodeId: string): string {
  return h.tokens.get(nodeId) ?? '';
}

function rejections(h: Harness): string[] {
  return h.logs.filter((entry) => entry.level === 'warn').map((entry) => String(entry.fields['reason']));
}

describe('edge transport handshake', () => {
  it('accepts a registered node with its payload and heartbeat settings and announces it', async () => {
    const h = await start();
    const node = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    expect(node.response).toMatchObject({
      accepted: true,
      edgeId: 'edge-test',
      protocolVersion: 1,
      heartbeatIntervalMs: 1000,
      heartbeatTimeoutMs: 3000,
    });
    expect(node.response.config).toMatchObject({
      nodeId: 'test-node',
      alias: 'test-node',
      maxConcurrency: 4,
    });
    expect(node.response.config?.adapters.map((adapter) => adapter.name)).toEqual(['cli', 'vllm', 'ollama']);
    await waitUntil(() => h.nodeEvents.length === 1, 2000, 'connected event');
    expect(h.nodeEvents[0]).toMatchObject({ kind: 'connected', nodeId: 'test-node', reason: 'registered' });
    expect(h.registry.list()[0]).toMatchObject({
      nodeId: 'test-node',
      agentVersion: '9.9.9',
      os: 'linux',
      arch: 'x64',
      hostname: 'fake-host',
      adapters: ['cli', 'ollama'],
    });
    await node.close();
    await waitUntil(() => h.registry.size === 0, 2000, 'node removed');
    await waitUntil(() => h.nodeEvents.length === 2, 2000, 'disconnected event');
    expect(h.nodeEvents[1]).toMatchObject({ kind: 'disconnected', nodeId: 'test-node', reason: 'shutdown' });
  });

  it('accepts the config dev token and gives a store-only node the default payload', async () => {
    const h = await start();
    const dev = await connectFakeNode(h.transport.address, { nodeId: 'dev-node', token: 'iop_dev_token' });
    expect(dev.response).toMatchObject({ accepted: true, config: { alias: 'dev' } });
    const storeOnly = await connectFakeNode(h.transport.address, {
      nodeId: 'store-only',
      token: token(h, 'store-only'),
    });
    expect(storeOnly.response).toMatchObject({
      accepted: true,
      config: { nodeId: 'store-only', adapters: [], providers: [] },
    });
    expect(h.registry.size).toBe(2);
  });

  it.each([
    [
      'unknown node',
      { nodeId: 'ghost', token: 'iop_x' },
      RegisterRejectCode.REGISTER_REJECT_CODE_UNKNOWN_NODE,
      "unknown node 'ghost': register it on the edge with 'iop-edge node register ghost'",
      'unknown-node',
    ],
    [
      'bad token',
      { nodeId: 'test-node', token: 'iop_wrong' },
      RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
      "invalid token for node 'test-node'",
      'bad-token',
    ],
    [
      'protocol mismatch',
      { nodeId: 'test-node', token: 'use-real', protocolVersion: 99 },
      RegisterRejectCode.REGISTER_REJECT_CODE_PROTOCOL_MISMATCH,
      'protocol version 99 is not supported: this edge speaks version 1; install a matching iop-node',
      'protocol-mismatch',
    ],
    [
      'agent kind mismatch',
      { nodeId: 'test-node', token: 'use-real', agentKind: 'other-agent' },
      RegisterRejectCode.REGISTER_REJECT_CODE_AGENT_KIND_MISMATCH,
      "node 'test-node' is an agent of kind 'other-agent', but the edge config expects 'iop-node' (nodes[].agent_kind)",
      'agent-kind-mismatch',
    ],
  ])('rejects %s with a reason, closes, and logs it', async (_name, options, code, reason, logReason) => {
    const h = await start();
    const node = await connectFakeNode(h.transport.address, {
      ...options,
      token: options.token === 'use-real' ? token(h, 'test-node') : options.token,
    });
    expect(node.response).toMatchObject({ accepted: false, rejectCode: code, reason });
    const closed = await node.connection.closed;
    expect(closed.byPeer).toBe(true);
    expect(h.registry.size).toBe(0);
    expect(rejections(h)).toContain(logReason);
    expect(h.nodeEvents).toEqual([]);
  });

  it('closes with protocol_violation when the first frame is not a register request', async () => {
    const h = await start();
    const socket = await connectSocket(h.transport.address);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.write(encodeFrame(build.heartbeatPing(1)));
    await new Promise((resolve) => socket.on('close', resolve));
    const goodbye = new FrameDecoder().push(Buffer.concat(received));
    expect(goodbye.map((message) => message.msg.$case)).toEqual(['goodbye']);
    expect(goodbye[0]?.msg.$case === 'goodbye' && goodbye[0].msg.goodbye.reason).toBe('protocol_violation');
    expect(rejections(h)).toContain('protocol_violation');
  });

  it('closes a connection that sends nothing within register_timeout_ms', async () => {
    const h = await start({ register_timeout_ms: 100 });
    const socket = await connectSocket(h.transport.address);
    socket.resume();
    const started = Date.now();
    await new Promise((resolve) => socket.on('close', resolve));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(rejections(h)).toContain('register-timeout');
  });
});

describe('edge transport connections', () => {
  it('replaces an older connection of the same node and closes it with reason replaced', async () => {
    const h = await start();
    const first = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    const second = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    expect(second.response.accepted).toBe(true);
    const closed = await first.connection.closed;
    expect(closed.reason).toBe('replaced');
    await waitUntil(() => h.nodeEvents.length === 3, 2000, 'three node events');
    expect(h.nodeEvents.map((event) => [event.kind, event.reason])).toEqual([
      ['connected', 'registered'],
      ['disconnected', 'replaced'],
      ['connected', 'registered'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(h.nodeEvents).toHaveLength(3);
    expect(h.registry.size).toBe(1);
    expect(h.transport.connectionCount).toBe(1);
  });

  it('keeps a node that answers pings and closes a silent one with heartbeat-timeout', async () => {
    const h = await start({ heartbeat_interval_ms: 40, heartbeat_timeout_ms: 200 });
    const healthy = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    const silent = await connectFakeNode(h.transport.address, {
      nodeId: 'dev-node',
      token: 'iop_dev_token',
      answerPings: false,
    });
    const closed = await silent.connection.closed;
    expect(closed.reason).toBe('heartbeat-timeout');
    await waitUntil(() => h.nodeEvents.some((event) => event.kind === 'disconnected'), 2000, 'disconnect');
    expect(h.nodeEvents.find((event) => event.kind === 'disconnected')).toMatchObject({
      nodeId: 'dev-node',
      reason: 'heartbeat-timeout',
    });
    expect(healthy.frames.some((frame) => frame.msg?.$case === 'heartbeatPing')).toBe(true);
    expect(h.registry.list().map((node) => node.nodeId)).toEqual(['test-node']);
    expect(h.registry.get('test-node')?.lastHeartbeatUnixMs).toBeGreaterThan(0);
  });

  it('answers a node that pings on its own and does not ping it back every interval, keeping it connected', async () => {
    const h = await start({ heartbeat_interval_ms: 50, heartbeat_timeout_ms: 200 });
    const chatty = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    const quiet = await connectFakeNode(h.transport.address, { nodeId: 'dev-node', token: 'iop_dev_token' });
    // Like an iop-node, but twice per interval: a timer of a loaded test machine firing late must not make the
    // node look silent for a whole interval (the edge would then rightly ping it).
    let seq = 0;
    const timer = setInterval(
      () => void chatty.send(build.heartbeatPing((seq += 1))).catch(() => undefined),
      25,
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 600));
    } finally {
      clearInterval(timer);
    }
    const kinds = (node: typeof chatty) => node.frames.map((frame) => frame.msg?.$case);
    const pongs = kinds(chatty).filter((kind) => kind === 'heartbeatPong').length;
    const pingsToChatty = kinds(chatty).filter((kind) => kind === 'heartbeatPing').length;
    const pingsToQuiet = kinds(quiet).filter((kind) => kind === 'heartbeatPing').length;
    expect(pongs).toBeGreaterThanOrEqual(seq - 1);
    // The node that answers only is pinged every interval; the one that pings gets at most the first round's.
    expect(pingsToQuiet).toBeGreaterThanOrEqual(4);
    expect(pingsToChatty).toBeLessThanOrEqual(Math.max(2, Math.floor(pingsToQuiet / 4)));
    expect(
      h.registry
        .list()
        .map((node) => node.nodeId)
        .sort(),
    ).toEqual(['dev-node', 'test-node']);
  });

  it.each([
    ['garbage payload', Buffer.from([0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff]), 'malformed_frame', false],
    ['oversize length prefix', Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 2, 3]), 'frame_too_large', false],
    ['half frame then close', Buffer.from([0, 0, 0, 50, 1, 2, 3]), 'truncated_frame', true],
  ])(
    'drops a connection sending a %s, logs why, and keeps serving a good node',
    async (_name, bytes, code, endAfter) => {
      const h = await start({}, { maxFrameBytes: 1024 * 1024 });
      const good = await connectFakeNode(h.transport.address, {
        nodeId: 'test-node',
        token: token(h, 'test-node'),
      });
      const bad = await connectSocket(h.transport.address);
      bad.on('error', () => undefined);
      bad.resume();
      const badClosed = new Promise((resolve) => bad.on('close', resolve));
      bad.write(bytes);
      if (endAfter) bad.end();
      await badClosed;
      await waitUntil(() => rejections(h).includes(code), 2000, `logged ${code}`);
      // The good node is untouched: a command round trip still works.
      const link = h.registry.get('test-node');
      const answered = (async () => {
        const request = await good.waitFor('nodeCommandRequest');
        await good.send(
          build.nodeCommandResponse(request.requestId, { ok: true, result: { still: 'alive' } }),
        );
      })();
      await expect(link?.command(create.nodeCommandRequest({ command: 'transport' }))).resolves.toMatchObject(
        {
          result: { still: 'alive' },
        },
      );
      await answered;
      expect(h.registry.size).toBe(1);
    },
  );

  it('drops a registered node that starts sending garbage, with the frame error as reason', async () => {
    const h = await start();
    const node = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    node.socket.write(Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff]));
    await waitUntil(() => h.nodeEvents.some((event) => event.kind === 'disconnected'), 2000, 'disconnect');
    expect(h.nodeEvents.at(-1)).toMatchObject({ kind: 'disconnected', reason: 'malformed_frame' });
    expect(h.registry.size).toBe(0);
  });

  it('evicts the longest-idle handshake beyond the pending limit while registered nodes keep working', async () => {
    const h = await start({ register_timeout_ms: 5000 }, { maxPendingConnections: 2 });
    const registered = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    const idle = [await connectSocket(h.transport.address), await connectSocket(h.transport.address)];
    await waitUntil(() => h.transport.connectionCount === 3, 2000, 'idle connections accepted');
    idle[0]?.resume();
    const evicted = new Promise((resolve) => idle[0]?.on('close', resolve));
    const newest = await connectSocket(h.transport.address);
    await evicted;
    expect(rejections(h)).toContain('evicted');
    expect(newest.destroyed).toBe(false);
    expect(registered.response.accepted).toBe(true);
    expect(h.registry.size).toBe(1);
    for (const socket of [...idle, newest]) socket.destroy();
    await waitUntil(() => h.transport.connectionCount === 1, 2000, 'idle connections gone');
  });

  it('stop() says goodbye shutdown to every node and refuses new connections', async () => {
    const h = await start();
    const node = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    await h.transport.stop('shutdown');
    const closed = await node.connection.closed;
    expect(closed.reason).toBe('shutdown');
    expect(h.registry.size).toBe(0);
    expect(h.transport.connectionCount).toBe(0);
    await expect(connectSocket(h.transport.address)).rejects.toThrow();
  });
});

describe('edge transport with the service', () => {
  it('runs end to end over loopback and ends the run with node_disconnected when the node dies', async () => {
    const h = await start();
    const pool = createProviderPool({ config: testEdgeConfig(), nodes: h.registry, events: h.bus });
    const service = createEdgeService({
      registry: h.registry,
      pool,
      events: h.bus,
      logger: recordingLogger(),
    });
    const node = await connectFakeNode(h.transport.address, {
      nodeId: 'test-node',
      token: token(h, 'test-node'),
    });
    await waitUntil(() => h.registry.size === 1, 2000, 'registered');
    const handle = await service.submitRun(
      { kind: 'route', adapter: 'cli', target: 'fake-cli' },
      {
        session: { kind: 'fixed', sessionId: 'default' },
        messages: [create.chatMessage({ role: 'user', content: 'hi' })],
      },
      { surface: 'console' },
    );
    const request = await node.waitFor('runRequest');
    const runId = request.msg?.$case === 'runRequest' ? request.msg.runRequest.runId : '';
    expect(runId).toBe(handle.runId);
    const event = (seq: number, part: Parameters<typeof toWireRunEvent>[2]): Envelope =>
      build.runEvent(toWireRunEvent(runId, seq, part));
    await node.send(event(1, { type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' }));
    await node.send(event(2, { type: 'text-delta', text: 'HI_OK\n' }));
    await node.send(
      event(3, { type: 'complete', detail: 'idle-timeout', finishReason: 'stop', backendMs: 5 }),
    );
    await expect(handle.done).resolves.toEqual({
      status: 'completed',
      detail: 'idle-timeout',
      finishReason: 'stop',
    });
    const parts: string[] = [];
    for await (const meta of handle.events) parts.push(meta.part.type);
    expect(parts).toEqual(['start', 'text-delta', 'complete']);

    const second = await service.submitRun(
      { kind: 'route', adapter: 'cli', target: 'fake-cli' },
      {
        session: { kind: 'fixed', sessionId: 'default' },
        messages: [create.chatMessage({ role: 'user', content: 'again' })],
      },
      { surface: 'console' },
    );
    await waitUntil(
      () => node.frames.filter((frame) => frame.msg?.$case === 'runRequest').length === 2,
      2000,
      'run 2',
    );
    node.kill();
    await expect(second.done).resolves.toMatchObject({ status: 'error', code: 'node_disconnected' });
    expect(service.inFlightRuns).toBe(0);
    // The run's node slot went back when it ended.
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    await waitUntil(() => h.registry.size === 0, 2000, 'node removed');
    expect(h.nodeEvents.at(-1)).toMatchObject({ kind: 'disconnected', reason: 'peer-closed' });
    pool.close();
  });
});
