// `nodes list` against an edge in cluster mode: every node of the fabric with the edge it is connected to.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createAdminClient } from '../admin/admin-client.js';
import { systemClock } from '../clock.js';
import { startAdminServer, type AdminSurface } from '../admin/admin-server.js';
import { silentLogger } from '../logging.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { createNodesListCommand } from './nodes-list.js';
import { runCli } from './run-cli.js';
import { memoryIo } from './test-support/memory-io.js';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 30);
const SINCE = Date.UTC(2026, 10, 29, 12);
const command = createNodesListCommand({
  createClient: (options) => createAdminClient({ ...options, timeoutMs: 3000 }, systemClock),
  now: () => NOW,
});

describe('iop-edge nodes list in cluster mode', () => {
  let dir: string;
  let surface: AdminSurface | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-nodes-list-cluster-'));
    const service = FakeEdgeService.forConsole();
    service.nodes = [{ ...node('gpu-01', 'gpu-01', SINCE), lastHeartbeatUnixMs: NOW - 1000 }];
    // What the cluster wrapper answers: the local node on this edge and a node on another edge.
    const clustered = Object.assign(service, {
      inFabric: true,
      fabricNodes: () => [
        { ...node('gpu-01', 'gpu-01', SINCE), lastHeartbeatUnixMs: NOW - 1000, edgeId: 'edge-a' },
        { ...node('gpu-02', 'gpu-02', SINCE), lastHeartbeatUnixMs: NOW - 3000, edgeId: 'edge-b' },
      ],
    });
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      token: '',
      service: clustered,
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
    });
  });

  afterEach(async () => {
    await surface?.close();
    surface = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('prints an EDGE column and edge_id for every node of the fabric', async () => {
    const address = (surface as AdminSurface).address;
    const table = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--addr', address], table.io, [command])).toBe(0);
    const lines = table.out().split('\n');
    expect(lines[0]).toMatch(/^NODE\s+EDGE\s+ALIAS\s+VERSION/);
    expect(lines[1]).toMatch(/^gpu-01\s+edge-a\s+gpu-01\s/);
    expect(lines[2]).toMatch(/^gpu-02\s+edge-b\s+gpu-02\s.*\s3s ago\s/);

    const json = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--json', '--addr', address], json.io, [command])).toBe(0);
    const parsed = JSON.parse(json.out()) as { nodes: { node_id: string; edge_id?: string }[] };
    expect(parsed.nodes.map((entry) => [entry.node_id, entry.edge_id])).toEqual([
      ['gpu-01', 'edge-a'],
      ['gpu-02', 'edge-b'],
    ]);
  });
});
