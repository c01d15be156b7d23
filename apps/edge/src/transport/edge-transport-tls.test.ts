import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEventBus } from '../events/event-bus.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { createNodeStore } from '../node/node-store.js';
import { testEdgeConfig } from '../node/test-support/config-fixture.js';
import { startNodeTransport } from '../node/node-transport.js';
import type { EdgeTransport } from './edge-transport.js';
import { connectFakeNode, connectSocket, recordingLogger, waitUntil } from './test-support/fake-node.js';

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'test-support/tls');
let dataDir: string;
let transport: EdgeTransport | undefined;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-tls-'));
});

afterEach(async () => {
  await transport?.stop();
  transport = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

function tlsConfig(certFile = path.join(tlsDir, 'cert.pem'), registerTimeoutMs?: number) {
  return testEdgeConfig({
    edge: {
      data_dir: dataDir,
      tls: { enabled: true, cert_file: certFile, key_file: path.join(tlsDir, 'key.pem') },
      ...(registerTimeoutMs !== undefined ? { register_timeout_ms: registerTimeoutMs } : {}),
    },
  });
}

/** Resolves when the socket closed, false when it is still open after `timeoutMs`. */
function closedWithin(socket: net.Socket, timeoutMs: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('edge transport over TLS', () => {
  it('registers a node over TLS and logs a plaintext client that fails the TLS handshake', async () => {
    const config = tlsConfig();
    const store = createNodeStore({ dataDir, configNodes: config.nodes });
    const { token } = await store.register('test-node');
    const logger = recordingLogger();
    const registry = createNodeRegistry();
    transport = await startNodeTransport({ config, store, registry, events: createEventBus(), logger });
    const ca = await readFile(path.join(tlsDir, 'cert.pem'));

    const plain = await connectSocket(transport.address);
    plain.on('error', () => undefined);
    plain.resume();
    const plainClosed = new Promise((resolve) => plain.on('close', resolve));
    plain.write(Buffer.from([0, 0, 0, 4, 1, 2, 3, 4]));
    await plainClosed;
    await waitUntil(
      () => logger.entries.some((entry) => entry.fields['reason'] === 'tls-handshake'),
      2000,
      'tls handshake failure logged',
    );

    const node = await connectFakeNode(transport.address, { nodeId: 'test-node', token, tlsCa: ca });
    expect(node.response.accepted).toBe(true);
    expect(registry.get('test-node')?.info.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('counts sockets against the per-address cap before their TLS handshake and evicts silent ones for a node', async () => {
    const config = tlsConfig();
    const store = createNodeStore({ dataDir, configNodes: config.nodes });
    const { token } = await store.register('test-node');
    const logger = recordingLogger();
    const registry = createNodeRegistry();
    transport = await startNodeTransport({
      config,
      store,
      registry,
      events: createEventBus(),
      logger,
      maxPendingPerAddress: 4,
      maxPendingConnections: 8,
    });
    const address = transport.address;
    const silent: net.Socket[] = [];
    for (let index = 0; index < 12; index += 1) {
      const socket = await connectSocket(address);
      socket.on('error', () => undefined);
      socket.resume();
      silent.push(socket);
    }
    try {
      // 12 silent sockets from one address, cap 4: the oldest 8 are evicted although none sent a ClientHello.
      await waitUntil(() => silent.filter((socket) => socket.destroyed).length >= 8, 3000, '8 evicted');
      expect(transport.connectionCount).toBe(4);
      const ca = await readFile(path.join(tlsDir, 'cert.pem'));
      const node = await connectFakeNode(address, { nodeId: 'test-node', token, tlsCa: ca });
      expect(node.response.accepted).toBe(true);
      expect(registry.get('test-node')).toBeDefined();
      expect(logger.entries.some((entry) => entry.fields['reason'] === 'evicted')).toBe(true);
    } finally {
      for (const socket of silent) socket.destroy();
    }
  });

  it('closes a socket that does not finish its TLS handshake within the register timeout', async () => {
    const config = tlsConfig(undefined, 300);
    const logger = recordingLogger();
    transport = await startNodeTransport({
      config,
      store: createNodeStore({ dataDir }),
      registry: createNodeRegistry(),
      events: createEventBus(),
      logger,
    });
    const socket = await connectSocket(transport.address);
    socket.on('error', () => undefined);
    socket.resume();
    const started = Date.now();
    expect(await closedWithin(socket, 3000)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(logger.entries.some((entry) => entry.fields['reason'] === 'tls-handshake-timeout')).toBe(true);
    await waitUntil(() => transport?.connectionCount === 0, 2000, 'no connection left');
  });

  it('refuses to start with a typed error when the certificate cannot be read', async () => {
    const config = tlsConfig(path.join(tlsDir, 'missing.pem'));
    await expect(
      startNodeTransport({
        config,
        store: createNodeStore({ dataDir }),
        registry: createNodeRegistry(),
        events: createEventBus(),
        logger: recordingLogger(),
      }),
    ).rejects.toMatchObject({ name: 'TransportError', code: 'tls_config' });
  });
});
