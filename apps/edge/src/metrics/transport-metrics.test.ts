// Transport metrics through a real edge runtime: connections the transport closes for bad frames are counted in
// iop_frame_errors_total by wire error code (garbage, oversize length prefix), and node registrations and
// disconnects are counted from the event bus — read back from the /metrics listener.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startEdgeRuntime, type EdgeRuntime } from '../edge-runtime.js';
import { silentLogger } from '../logging.js';
import { testEdgeConfig } from '../node/test-support/config-fixture.js';
import { connectFakeNode, waitUntil } from '../transport/test-support/fake-node.js';
import { createMetricsSurface } from './metrics-surface.js';

let runtime: EdgeRuntime | undefined;
let dataDir = '';

afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{ runtime: EdgeRuntime; metricsUrl: string }> {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-metrics-'));
  const base = testEdgeConfig({ edge: { data_dir: dataDir, register_timeout_ms: 5000 } });
  runtime = await startEdgeRuntime({
    config: { ...base, metrics: { enabled: true, listen: '127.0.0.1:0' } },
    configPath: 'test',
    logger: silentLogger,
    surfaces: [createMetricsSurface()],
  });
  const address = runtime.surfaces.find((surface) => surface.name === 'metrics')?.address ?? '';
  return { runtime, metricsUrl: address.startsWith('http') ? address : `http://${address}` };
}

async function metricsText(metricsUrl: string): Promise<string> {
  return (await fetch(`${metricsUrl}/metrics`)).text();
}

/** Sends raw bytes and resolves when the edge closes the socket. */
async function sendRaw(address: string, bytes: Buffer): Promise<void> {
  const [host, port] = [
    address.slice(0, address.lastIndexOf(':')),
    Number(address.slice(address.lastIndexOf(':') + 1)),
  ];
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host, port }, () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('edge did not close the connection within 3 s'));
    }, 3000);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('transport metrics', () => {
  it('counts connections closed for bad frames by wire error code', async () => {
    const { runtime, metricsUrl } = await start();
    // A length prefix of 2 GiB: refused before anything is buffered.
    const oversize = Buffer.alloc(8);
    oversize.writeUInt32BE(0x80000000, 0);
    await sendRaw(runtime.transportAddress, oversize);
    // A small frame whose payload is not a protobuf Envelope.
    const garbage = Buffer.concat([Buffer.from([0, 0, 0, 4]), Buffer.from([0xff, 0xff, 0xff, 0xff])]);
    await sendRaw(runtime.transportAddress, garbage);
    await sendRaw(runtime.transportAddress, garbage);
    const text = await metricsText(metricsUrl);
    expect(text).toContain('iop_frame_errors_total{code="frame_too_large"} 1');
    expect(text).toContain('iop_frame_errors_total{code="malformed_frame"} 2');
  });

  it('counts node registrations and disconnects with their reason', async () => {
    const { runtime, metricsUrl } = await start();
    const { token } = await runtime.store.register('test-node');
    const node = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
    await waitUntil(() => runtime.registry.size === 1, 3000, 'registration');
    node.kill();
    await waitUntil(() => runtime.registry.size === 0, 3000, 'disconnect');
    // The counters follow the event bus asynchronously: poll the scrape for a bounded time.
    let text = await metricsText(metricsUrl);
    for (let attempt = 0; attempt < 100 && !text.includes('iop_node_disconnects_total{node='); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      text = await metricsText(metricsUrl);
    }
    expect(text).toContain('iop_node_connections_total{node="test-node"} 1');
    expect(text).toMatch(/iop_node_disconnects_total\{node="test-node",reason="[a-z-_]+"\} 1/);
    expect(text).toContain('iop_nodes_connected 0');
    expect(text).not.toContain('iop_frame_errors_total{');
  });
});
