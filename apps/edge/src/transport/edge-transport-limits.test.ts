import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { envelope as build } from '@iop/wire';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import { createNodeRegistry, type NodeRegistry } from '../node/node-registry.js';
import { createNodeStore } from '../node/node-store.js';
import { testEdgeConfig, testNode } from '../node/test-support/config-fixture.js';
import { startNodeTransport } from '../node/node-transport.js';
import type { EdgeTransport } from './edge-transport.js';
import type { NodeTransportOptions } from '../node/node-transport.js';
import {
  connectFakeNode,
  connectSocket,
  recordingLogger,
  waitUntil,
  type LogEntry,
} from './test-support/fake-node.js';

let dataDir: string;
let transport: EdgeTransport | undefined;
let bus: ClosableEventBus | undefined;
const sockets: net.Socket[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'iop-transport-limits-'));
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await transport?.stop();
  bus?.close();
  transport = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

async function start(
  extra: Partial<NodeTransportOptions> = {},
  edge: { register_timeout_ms?: number } = {},
): Promise<{ registry: NodeRegistry; logs: LogEntry[]; token: string; address: string }> {
  const config = testEdgeConfig({ edge: { data_dir: dataDir, ...edge }, nodes: [testNode()] });
  const store = createNodeStore({ dataDir, configNodes: config.nodes });
  const token = (await store.register('test-node')).token;
  const registry = createNodeRegistry();
  bus = createEventBus({ replaySize: 10, queueSize: 10 });
  const logger = recordingLogger();
  transport = await startNodeTransport({
    config,
    store,
    registry,
    events: bus,
    logger,
    closeTimeoutMs: 200,
    ...extra,
  });
  return { registry, logs: logger.entries, token, address: transport.address };
}

async function open(address: string): Promise<net.Socket> {
  const socket = await connectSocket(address);
  socket.on('error', () => undefined);
  socket.resume();
  sockets.push(socket);
  return socket;
}

function closed(socket: net.Socket, timeoutMs = 3000): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('edge transport before registration', () => {
  it('closes a peer that announces a 16 MiB frame before registering, without buffering it', async () => {
    const { logs, address } = await start();
    const socket = await open(address);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(16 * 1024 * 1024);
    socket.write(header);
    socket.write(Buffer.alloc(32 * 1024, 1));
    expect(await closed(socket)).toBe(true);
    await waitUntil(
      () => logs.some((entry) => entry.fields['reason'] === 'frame_too_large'),
      2000,
      'frame_too_large logged',
    );
  });

  it('accepts full-size frames once the node is registered', async () => {
    const { token, address, registry } = await start({ preRegistrationFrameBytes: 1024 });
    const node = await connectFakeNode(address, { nodeId: 'test-node', token });
    expect(node.response.accepted).toBe(true);
    let nodeClosed = false;
    void node.connection.closed.then(() => (nodeClosed = true));
    // A command response far above the pre-registration limit (an unknown request id: dropped by the link).
    await node.send(build.nodeCommandResponse('big', { ok: true, result: { blob: 'x'.repeat(64 * 1024) } }));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(nodeClosed).toBe(false);
    expect(registry.size).toBe(1);
    await node.close();
  });

  it('evicts the longest-idle pending connection of an address so a real node still registers', async () => {
    const { token, address, registry, logs } = await start({ maxPendingPerAddress: 4 });
    const idle: net.Socket[] = [];
    for (let index = 0; index < 4; index += 1) idle.push(await open(address));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const node = await connectFakeNode(address, { nodeId: 'test-node', token });
    expect(node.response.accepted).toBe(true);
    expect(registry.size).toBe(1);
    expect(await closed(idle[0])).toBe(true);
    expect(idle.slice(1).every((socket) => !socket.destroyed)).toBe(true);
    expect(logs.some((entry) => entry.fields['reason'] === 'evicted')).toBe(true);
    await node.close();
  });

  it('evicts across addresses at the total cap and never evicts a registered node', async () => {
    const { token, address, registry } = await start({ maxPendingConnections: 3, maxPendingPerAddress: 100 });
    const node = await connectFakeNode(address, { nodeId: 'test-node', token });
    const idle: net.Socket[] = [];
    for (let index = 0; index < 6; index += 1) idle.push(await open(address));
    await waitUntil(() => idle.filter((socket) => socket.destroyed).length >= 3, 3000, 'three evictions');
    expect(registry.size).toBe(1);
    // The client sees its socket destroyed before the edge has counted the close: wait for the edge's count.
    await waitUntil(() => (transport?.connectionCount ?? 0) <= 4, 3000, 'the edge to count the evictions');
    expect(registry.size).toBe(1);
    await node.close();
  });

  it('counts only connections still in the handshake: a registered fleet far above the caps stays', async () => {
    const { address, registry, logs } = await start({ maxPendingConnections: 3, maxPendingPerAddress: 2 });
    const store = createNodeStore({ dataDir });
    const nodes = [];
    for (let index = 0; index < 8; index += 1) {
      const nodeId = `fleet-${index}`;
      const { token } = await store.register(nodeId);
      nodes.push(await connectFakeNode(address, { nodeId, token }));
    }
    expect(nodes.every((node) => node.response.accepted)).toBe(true);
    // New handshakes still get their own room, and none of the registered nodes is taken for one.
    const idle = [await open(address), await open(address)];
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(idle.every((socket) => !socket.destroyed)).toBe(true);
    expect(registry.size).toBe(8);
    expect(logs.some((entry) => entry.fields['reason'] === 'evicted')).toBe(false);
    for (const node of nodes) await node.close();
  });

  it('rate-limits the warning lines one address can cause', async () => {
    const { logs, address } = await start({ warningsPerAddressPerMinute: 3 });
    for (let index = 0; index < 10; index += 1) {
      const socket = await open(address);
      socket.write(Buffer.from([0xff, 0xff, 0xff, 0xff]));
      await closed(socket);
    }
    const warnings = logs.filter((entry) => entry.level === 'warn');
    expect(warnings.length).toBe(3);
    expect(logs.filter((entry) => entry.fields['reason'] === 'frame_too_large').length).toBeGreaterThan(3);
  });

  it('closes a silent peer after register_timeout_ms', async () => {
    const { address } = await start({}, { register_timeout_ms: 150 });
    const socket = await open(address);
    const started = Date.now();
    expect(await closed(socket)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
