import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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

function tlsConfig(certFile = path.join(tlsDir, 'cert.pem')) {
  return testEdgeConfig({
    edge: {
      data_dir: dataDir,
      tls: { enabled: true, cert_file: certFile, key_file: path.join(tlsDir, 'key.pem') },
    },
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
