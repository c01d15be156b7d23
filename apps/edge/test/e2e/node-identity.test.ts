// Issue 30, against a real TLS edge and real `iop-node run` processes on loopback: 600 TCP connections that never
// send a ClientHello are bounded before their handshake (evicted or timed out) while a real node registers, and
// a second node process with a copy of a node's token but its own data dir (so its own identity key) is refused
// with identity_mismatch while the real node stays connected.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { fingerprintOfCertificate } from '@iop/wire';
import {
  ProcessGroup,
  metricSum,
  repoRoot,
  runEdgeCommand,
  scrapeMetrics,
  sleep,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';

jest.setTimeout(120_000);

const TOKEN = 'iop_e2e_identity_token_0123456789';
const tlsDir = path.join(repoRoot, 'apps/edge/src/transport/test-support/tls');
const pin = fingerprintOfCertificate(readFileSync(path.join(tlsDir, 'cert.pem')));

const group = new ProcessGroup();
let edge: EdgeProcess;

function node(id: string): Record<string, unknown> {
  return {
    id,
    alias: id,
    token: TOKEN,
    runtime: { max_concurrency: 1, health_probe_interval_ms: 0 },
  };
}

function hostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}

function connect(address: string): Promise<net.Socket | undefined> {
  const { host, port } = hostPort(address);
  return new Promise((resolve) => {
    const socket = net.connect(port, host, () => resolve(socket));
    socket.once('error', () => resolve(undefined));
  });
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), name, labels);
}

function startNode(id: string, dataDir: string): TestProcess {
  return startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: id,
    token: TOKEN,
    dataDir,
    args: ['--edge-fingerprint', pin],
  });
}

/** The identity fingerprint a node logged at its start. */
function loggedIdentity(process: TestProcess): string {
  const record = process.logRecords().find((entry) => entry['msg'] === 'iop-node starting');
  return typeof record?.['identity'] === 'string' ? record['identity'] : '';
}

beforeAll(async () => {
  const dir = await group.tempDir('iop-e2e-identity-');
  edge = await startEdgeProcess(group, dir, {
    edge: {
      id: 'edge-identity',
      listen: '127.0.0.1:0',
      data_dir: `${dir}/data`,
      register_timeout_ms: 5000,
      heartbeat_interval_ms: 500,
      // A starved event loop on a loaded 2-core machine must not pass for a dead node.
      heartbeat_timeout_ms: 10_000,
      tls: {
        enabled: true,
        cert_file: path.join(tlsDir, 'cert.pem'),
        key_file: path.join(tlsDir, 'key.pem'),
      },
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    models: [],
    nodes: [node('n1'), node('n2')],
  });
}, 60_000);

afterAll(async () => {
  await group.close();
});

describe('node listener bounds and node identity on a real TLS edge', () => {
  it('holds at most 300 of 600 silent TLS-port connections after 7 s, and a real node registers meanwhile', async () => {
    const silent: net.Socket[] = [];
    let flooding = true;
    const flood = (async () => {
      // 600 at once, then more until the node has registered (bounded: at most 3,000 in all).
      for (let index = 0; index < 3000 && flooding; index += 1) {
        const socket = await connect(edge.addresses.transport);
        if (socket) {
          socket.on('error', () => undefined);
          socket.resume();
          silent.push(socket);
        }
        if (index >= 600) await sleep(5);
      }
    })();
    try {
      await waitUntil(() => silent.length >= 600, 30_000, '600 silent connections');
      const first600 = silent.slice(0, 600);
      const floodedAt = Date.now();
      const started = Date.now();
      const real = startNode('n2', await group.tempDir('iop-e2e-identity-n2-'));
      await waitUntil(
        async () => (await metric('iop_node_connections_total', { node: 'n2' })) >= 1,
        30_000,
        () => `n2 registered during the flood\n${real.describe()}\n${edge.describe()}`,
      );
      const registeredMs = Date.now() - started;
      const openedMeanwhile = silent.length - 600;
      expect(silent.length).toBeLessThan(3000); // the flood was still going when the node registered
      flooding = false;
      await flood;
      await sleep(Math.max(0, 7000 - (Date.now() - floodedAt)));
      const open = first600.filter((socket) => !socket.destroyed).length;
      process.stdout.write(
        `[e2e identity] n2 registered ${registeredMs} ms after its start while ${openedMeanwhile} more silent ` +
          `connections followed the first 600; ${open} of the first 600 still open 7 s after them\n`,
      );
      expect(open).toBeLessThanOrEqual(300);
      expect(real.running).toBe(true);
    } finally {
      flooding = false;
      await flood;
      for (const socket of silent) socket.destroy();
    }
  });

  it('refuses a second node process with the token and its own data dir; the connected node stays', async () => {
    const real = startNode('n1', await group.tempDir('iop-e2e-identity-n1-'));
    await waitUntil(
      async () => (await metric('iop_node_connections_total', { node: 'n1' })) === 1,
      30_000,
      () => `n1 registered\n${real.describe()}\n${edge.describe()}`,
    );
    const realIdentity = loggedIdentity(real);
    expect(realIdentity).toMatch(/^sha256:[0-9a-f]{64}$/);

    const copy = startNode('n1', await group.tempDir('iop-e2e-identity-copy-'));
    const status = await Promise.race([copy.exited, sleep(30_000).then(() => undefined)]);
    expect(status).toEqual({ code: 1, signal: null });
    expect(copy.stderr()).toContain('identity_mismatch');
    expect(copy.stderr()).toContain(realIdentity);
    expect(loggedIdentity(copy)).not.toBe(realIdentity);

    // The real node was never replaced: one accepted registration, no disconnect, still serving.
    await sleep(500);
    expect(real.running).toBe(true);
    expect(await metric('iop_node_connections_total', { node: 'n1' })).toBe(1);
    expect(await metric('iop_node_disconnects_total', { node: 'n1' })).toBe(0);
    const listed = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', edge.addresses.admin]);
    expect(listed.status.code).toBe(0);
    const nodes = (JSON.parse(listed.stdout) as { nodes: Array<Record<string, unknown>> }).nodes;
    expect(nodes.find((entry) => entry['node_id'] === 'n1')?.['identity_fingerprint']).toBe(realIdentity);
  });
});
