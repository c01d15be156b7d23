// Live config refresh across processes, all or nothing (issue 16): a real `iop-edge serve`, a real `iop-node run`
// (n1, an openai_compat adapter on a fake vLLM server) and a scripted node speaking the real protocol (n2, made to
// refuse or accept the pushed payload). `iop-edge config refresh --mode apply` raises both providers' capacity
// 1 → 2: with n2 refusing it ends `rejected`, exit 1, n1 is reverted, and both the edge (`nodes list --json`) and
// dispatch (two concurrent requests overlap at the backend at most once) keep capacity 1; with n2 accepting the
// same refresh ends `applied`, exit 0, and two requests run at once. n1 runs with health_probe_interval_ms 0: its
// backend sees no health probe at all.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startFakeOpenAI, type FakeServer, type RecordedRequest } from '@iop/testkit';
import { connectFakeNode } from '../../src/transport/test-support/fake-node.js';
import { ScriptedNode } from '../refresh-harness.js';
import {
  ProcessGroup,
  runEdgeCommand,
  sleep,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';

jest.setTimeout(120_000);

const TOKEN = 'iop_e2e_all_or_nothing_token_01234';
const SERVED = 'served-model';

const group = new ProcessGroup();
let backend: FakeServer;
let edge: EdgeProcess;
let realNode: TestProcess;
let scripted: ScriptedNode;
let dir: string;

/** The edge.yaml document: n1 → p1 (model m1), n2 → p2 (model m2), both providers at `capacity`. */
function config(dataDir: string, capacity: number): Record<string, unknown> {
  const node = (id: string, provider: string, probeMs: number) => ({
    id,
    token: TOKEN,
    runtime: { max_concurrency: 4, health_probe_interval_ms: probeMs },
    adapters: { instances: [{ name: 'vllm', type: 'openai_compat', base_url: `${backend.url}/v1` }] },
    providers: [
      {
        id: provider,
        type: 'vllm',
        category: 'api',
        adapter: 'vllm',
        models: [SERVED],
        capacity,
        max_queue: 8,
        queue_timeout_ms: 20_000,
      },
    ],
  });
  return {
    edge: {
      id: 'edge-all-or-nothing',
      listen: '127.0.0.1:0',
      data_dir: dataDir,
      register_timeout_ms: 2000,
      heartbeat_interval_ms: 500,
      heartbeat_timeout_ms: 5000,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: false },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 60 },
    a2a: { enabled: false },
    models: [
      { id: 'm1', providers: { p1: SERVED } },
      { id: 'm2', providers: { p2: SERVED } },
    ],
    nodes: [node('n1', 'p1', 0), node('n2', 'p2', 60_000)],
  };
}

async function refresh(capacity: number): Promise<{ code: number | null; stdout: string }> {
  const candidate = path.join(dir, `candidate-${capacity}-${Date.now()}.yaml`);
  await writeFile(candidate, JSON.stringify(config(path.join(dir, 'data'), capacity), null, 2));
  const result = await runEdgeCommand(group, [
    'config',
    'refresh',
    '--mode',
    'apply',
    '--config',
    candidate,
    '--addr',
    edge.addresses.admin,
  ]);
  return { code: result.status.code, stdout: result.stdout + result.stderr };
}

async function providerCapacities(): Promise<Record<string, number>> {
  const listed = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', edge.addresses.admin]);
  expect(listed.status.code).toBe(0);
  const parsed = JSON.parse(listed.stdout) as {
    nodes: { node_id: string; providers: { provider_id: string; capacity: number }[] }[];
  };
  const capacities: Record<string, number> = {};
  for (const node of parsed.nodes) {
    for (const provider of node.providers)
      capacities[`${node.node_id}/${provider.provider_id}`] = provider.capacity;
  }
  return capacities;
}

function completions(): RecordedRequest[] {
  return backend.requests.filter((request) => request.path === '/v1/chat/completions');
}

/** The most chat requests the backend had open at once among `requests` (from their recorded intervals). */
function maxOverlap(requests: RecordedRequest[]): number {
  const edges = requests.flatMap((request) => [
    { at: request.receivedAt, delta: 1 },
    { at: request.closedAt ?? Number.POSITIVE_INFINITY, delta: -1 },
  ]);
  edges.sort((left, right) => left.at - right.at || left.delta - right.delta);
  let open = 0;
  let most = 0;
  for (const entry of edges) {
    open += entry.delta;
    most = Math.max(most, open);
  }
  return most;
}

/** Sends two streaming requests for m1 at once; answers how many ran on the backend at the same time. */
async function dispatchTwo(): Promise<number> {
  const before = completions().length;
  const statuses = await Promise.all(
    [1, 2].map(async (index) => {
      const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm1',
          stream: true,
          messages: [{ role: 'user', content: `request ${index}` }],
        }),
      });
      await response.text();
      return response.status;
    }),
  );
  expect(statuses).toEqual([200, 200]);
  await waitUntil(
    () =>
      completions().length >= before + 2 && completions().every((request) => request.closedAt !== undefined),
    10_000,
    'both requests finished at the backend',
  );
  return maxOverlap(completions().slice(before));
}

function refreshedRevisions(): string[] {
  return realNode
    .logRecords()
    .filter((record) => record['msg'] === 'config refreshed')
    .map((record) => String(record['revision']));
}

beforeAll(async () => {
  // Each streamed answer takes ~0.5 s, so two requests either overlap clearly or run one after the other.
  backend = await startFakeOpenAI({ behavior: { models: [SERVED], tokenCount: 10, tokenDelayMs: 50 } });
  dir = await group.tempDir('iop-e2e-all-or-nothing-');
  edge = await startEdgeProcess(group, dir, config(path.join(dir, 'data'), 1));
  realNode = startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: 'n1',
    token: TOKEN,
    dataDir: await group.tempDir('iop-e2e-all-or-nothing-n1-'),
  });
  scripted = new ScriptedNode(
    'n2',
    await connectFakeNode(edge.addresses.transport, { nodeId: 'n2', token: TOKEN }),
  );
  await waitUntil(
    async () => Object.keys(await providerCapacities()).length === 2,
    30_000,
    () => `both nodes connected\n${edge.describe()}\n${realNode.describe()}`,
  );
}, 90_000);

afterAll(async () => {
  await scripted?.close();
  await group.close();
  await backend?.close();
});

describe('config refresh --mode apply across processes', () => {
  it('a node with health_probe_interval_ms 0 sends its backend no health probe (5 s)', async () => {
    await sleep(5000);
    expect(realNode.running).toBe(true);
    expect(backend.requests.filter((request) => request.path === '/v1/models')).toEqual([]);
  });

  it('one node refusing the apply makes it rejected (exit 1): every node and the edge keep the old values', async () => {
    expect(await providerCapacities()).toEqual({ 'n1/p1': 1, 'n2/p2': 1 });
    expect(await dispatchTwo()).toBe(1);
    scripted.answer = 'refuse';

    const result = await refresh(2);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('rejected: nothing was applied');
    expect(result.stdout).toContain(
      'nodes[n2]: the node did not apply its new payload (failed: adapter rebuild failed)',
    );
    expect(result.stdout).toMatch(/^ {4}n1 reverted$/m);
    expect(result.stdout).toMatch(/^ {4}n2 failed: adapter rebuild failed$/m);

    // n1 applied the new payload, then took its previous one back; n2 was sent the payload once and refused it.
    await waitUntil(
      () => refreshedRevisions().length === 2,
      5000,
      () => realNode.describe(),
    );
    const [applied, reverted] = refreshedRevisions();
    expect(applied).not.toBe(reverted);
    expect(scripted.refreshes.map((payload) => payload.providers[0]?.capacity)).toEqual([2]);
    expect(await providerCapacities()).toEqual({ 'n1/p1': 1, 'n2/p2': 1 });
    expect(await dispatchTwo()).toBe(1);
  });

  it('the same refresh with both nodes accepting is applied (exit 0) everywhere', async () => {
    scripted.answer = 'ack';
    const result = await refresh(2);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('applied live (no restart needed)');
    expect(result.stdout).toMatch(/^ {4}n1 applied$/m);
    expect(result.stdout).toMatch(/^ {4}n2 applied$/m);
    await waitUntil(
      () => refreshedRevisions().length === 3,
      5000,
      () => realNode.describe(),
    );
    // The payload n1 now runs is the one it applied (and reverted) the first time.
    expect(refreshedRevisions()[2]).toBe(refreshedRevisions()[0]);
    expect(await providerCapacities()).toEqual({ 'n1/p1': 2, 'n2/p2': 2 });
    expect(await dispatchTwo()).toBe(2);
  });
});
