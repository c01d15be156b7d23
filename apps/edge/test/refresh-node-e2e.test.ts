// Live config refresh with a real node agent process (apps/node/dist, built by `make compile`) and a real HTTP
// backend (the fake OpenAI-compatible server from @iop/testkit): the node applies the pushed payload and
// acknowledges it (node_results `applied`), its max_concurrency changes, and a run streaming through the node
// while the refresh is applied completes untouched.
import { describe, it, expect, beforeAll, afterEach } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAI, type FakeServer } from '@iop/testkit';
import {
  NODE_TOKEN,
  poolIdle,
  startRefreshHarness,
  waitUntil,
  type ConfigSpec,
  type RefreshHarness,
} from './refresh-harness.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const nodeMain = path.join(repoRoot, 'apps/node/dist/main.js');

const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => {
  if (!existsSync(nodeMain)) throw new Error(`${nodeMain} is missing: run 'make compile' first`);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function startNode(
  edgeAddress: string,
  nodeId: string,
  dataDir: string,
): { child: ChildProcess; output: () => string } {
  const child = spawn(
    process.execPath,
    [
      nodeMain,
      'run',
      '--edge',
      edgeAddress,
      '--node-id',
      nodeId,
      '--data-dir',
      dataDir,
      '--log-format',
      'json',
    ],
    { cwd: repoRoot, env: { ...process.env, IOP_NODE_TOKEN: NODE_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
  });
  return { child, output: () => output };
}

describe('live config refresh with a real node agent', () => {
  it('the node applies and acknowledges the pushed payload while a run streams through it', async () => {
    const backend: FakeServer = await startFakeOpenAI({
      behavior: { models: ['served-a'], tokenCount: 30, tokenDelayMs: 20 },
    });
    cleanups.push(() => backend.close());
    const shape = (dataDir: string, capacity: number, maxConcurrency: number): ConfigSpec => ({
      dataDir,
      baseUrl: `${backend.url}/v1`,
      nodes: [
        {
          id: 'real-node',
          max_concurrency: maxConcurrency,
          providers: [{ id: 'p1', served: 'served-a', capacity }],
        },
      ],
      models: [{ id: 'm', providers: { p1: 'served-a' } }],
    });
    let base!: ConfigSpec;
    const harness: RefreshHarness = await startRefreshHarness((dataDir) => (base = shape(dataDir, 1, 4)), {
      connect: [],
      nodeTimeoutMs: 5000,
    });
    cleanups.push(() => harness.close());
    const nodeData = await mkdtemp(path.join(os.tmpdir(), 'iop-refresh-node-'));
    cleanups.push(() => rm(nodeData, { recursive: true, force: true }));
    const node = startNode(harness.runtime.transportAddress, 'real-node', nodeData);
    await waitUntil(
      () => harness.runtime.registry.get('real-node') !== undefined,
      15_000,
      `node registration; node output:\n${node.output()}`,
    );
    const capabilities = async (): Promise<string | undefined> =>
      (
        await harness.runtime.service.nodeCommand({
          node: 'real-node',
          request: {
            command: 'capabilities',
            adapter: 'vllm',
            target: 'served-a',
            sessionId: '',
            args: {},
            providerId: '',
          },
        })
      ).result['max_concurrency'];
    expect(await capabilities()).toBe('4');

    const streaming = harness.streamChat('m');
    await waitUntil(() => backend.activeRequests === 1, 5000, 'run streaming on the backend');
    const result = await harness.refresh('apply', shape(base.dataDir, 2, 7));
    expect(result.status).toBe('applied');
    expect(result.reports.map((report) => report.path).sort()).toEqual([
      'nodes[real-node].providers[p1].capacity',
      'nodes[real-node].runtime.max_concurrency',
    ]);
    expect(result.node_results).toEqual([{ node_id: 'real-node', status: 'applied', error: '' }]);
    expect(backend.activeRequests).toBe(1);

    const outcome = await streaming;
    expect(outcome.status).toBe(200);
    expect(outcome.text.split(' ')).toHaveLength(30);
    expect(await capabilities()).toBe('7');
    expect(harness.runtime.registry.get('real-node')?.payload.maxConcurrency).toBe(7);
    expect(node.output()).toContain('config refreshed');

    // The rebuilt node still serves, now two at a time on p1.
    let overlap = 0;
    const sampler = setInterval(() => (overlap = Math.max(overlap, backend.activeRequests)), 5);
    try {
      const [first, second] = await Promise.all([harness.streamChat('m'), harness.streamChat('m')]);
      expect([first.status, second.status]).toEqual([200, 200]);
    } finally {
      clearInterval(sampler);
    }
    expect(overlap).toBe(2);
    await waitUntil(() => poolIdle(harness.pool), 3000, 'pool idle');
  });
});
