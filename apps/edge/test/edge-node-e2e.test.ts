// Cross-process: the edge core in this process, real `iop-node run` processes (apps/node/dist, built by `make
// compile`) driving the repo's fake-cli. Checks what issue 3 asks of the spine: a run travels edge → node →
// adapter → back; a wrong token is rejected with its reason; a node killed mid-run ends the run with an error
// and leaves nothing in flight; a node re-registers on its own after the edge restarts.
import { describe, it, expect, beforeAll, afterEach } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { create } from '@iop/wire';
import { startEdgeRuntime, type EdgeRuntime } from '../src/edge-runtime.js';
import type { EdgeEvent, EdgeNodeEvent } from '../src/events/types.js';
import { silentLogger } from '../src/logging.js';
import { testEdgeConfig, testNode, fakeCliProfile } from '../src/node/test-support/config-fixture.js';
import type { RunEventWithMeta } from '../src/service/types.js';
import { waitUntil } from '../src/transport/test-support/fake-node.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const nodeMain = path.join(repoRoot, 'apps/node/dist/main.js');
const fakeCli = path.join(repoRoot, 'bin/iop-fake-cli');

interface NodeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => {
  if (!existsSync(nodeMain)) throw new Error(`${nodeMain} is missing: run 'make compile' first`);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function startEdge(
  dataDir: string,
  port: number,
): Promise<{ runtime: EdgeRuntime; nodeEvents: EdgeNodeEvent[] }> {
  const config = testEdgeConfig({
    edge: {
      listen: `127.0.0.1:${port}`,
      data_dir: dataDir,
      heartbeat_interval_ms: 500,
      heartbeat_timeout_ms: 3000,
    },
    nodes: [
      testNode({
        providers: [],
        adapters: {
          instances: [
            {
              name: 'cli',
              type: 'cli',
              enabled: true,
              profiles: { 'fake-cli': fakeCliProfile({ command: fakeCli, idle_timeout_ms: 600 }) },
              max_sessions: 4,
              session_idle_ttl_ms: 60_000,
              workspace_roots: [],
              run_as: '',
              fabric_model: '',
            },
          ],
        },
      }),
    ],
  });
  const runtime = await startEdgeRuntime({ config, configPath: 'test', logger: silentLogger, surfaces: [] });
  const nodeEvents: EdgeNodeEvent[] = [];
  const subscription = runtime.events.subscribe();
  void (async () => {
    for await (const event of subscription as AsyncIterable<EdgeEvent>) {
      if (event.type === 'node') nodeEvents.push(event.event);
    }
  })();
  cleanups.push(() => runtime.stop());
  return { runtime, nodeEvents };
}

function startNode(port: number, token: string, dataDir: string, extra: string[] = []): NodeProcess {
  const child = spawn(
    process.execPath,
    [
      nodeMain,
      'run',
      '--edge',
      `127.0.0.1:${port}`,
      '--node-id',
      'test-node',
      '--data-dir',
      dataDir,
      '--retry-interval-ms',
      '200',
      '--max-retries',
      '50',
      '--log-format',
      'json',
      ...extra,
    ],
    { cwd: repoRoot, env: { ...process.env, IOP_NODE_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
  });
  return { child, output: () => output, exited };
}

/** submitRun arguments for one prompt to the node's fake-cli target, session `default`. */
function prompt(text: string): Parameters<EdgeRuntime['service']['submitRun']> {
  return [
    { kind: 'route', adapter: 'cli', target: 'fake-cli' },
    {
      session: { kind: 'fixed', sessionId: 'default' },
      messages: [create.chatMessage({ role: 'user', content: text })],
    },
    { surface: 'console' },
  ];
}

async function collect(events: AsyncIterable<RunEventWithMeta>): Promise<RunEventWithMeta[]> {
  const result: RunEventWithMeta[] = [];
  for await (const event of events) result.push(event);
  return result;
}

describe('edge core with real node processes', () => {
  it('runs a prompt through a real node and fake-cli, and ends an in-flight run when the node is killed', async () => {
    const port = await freePort();
    const { runtime, nodeEvents } = await startEdge(await tempDir('iop-e2e-edge-'), port);
    const { token } = await runtime.store.register('test-node');
    const node = startNode(port, token, await tempDir('iop-e2e-node-'));
    await waitUntil(() => runtime.registry.size === 1, 15_000, 'node registration').catch(
      (error: unknown) => {
        throw new Error(`${String(error)}; node output:\n${node.output()}`);
      },
    );
    expect(runtime.service.resolveNode()).toMatchObject({ nodeId: 'test-node', alias: 'test-node' });

    const handle = await runtime.service.submitRun(
      ...prompt('Convert token iop_e2e_one and reply only with converted token'),
    );
    const events = await collect(handle.events);
    const text = events
      .flatMap((event) => (event.part.type === 'text-delta' ? [event.part.text] : []))
      .join('');
    expect(events[0]?.part).toMatchObject({ type: 'start' });
    expect(text).toContain('IOP_E2E_ONE_OK');
    expect(text).toContain('IOP_E2E_ONE_TAIL');
    expect(events.at(-1)?.part).toMatchObject({ type: 'complete', detail: 'idle-timeout' });
    expect(handle.overheadMs()).toBeGreaterThanOrEqual(0);

    const second = await runtime.service.submitRun(
      ...prompt('Convert token iop_e2e_two and reply only with converted token'),
    );
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of second.events) {
        seen.push(event.part.type);
        if (event.part.type === 'text-delta') node.child.kill('SIGKILL');
      }
    })();
    await expect(second.done).resolves.toMatchObject({ status: 'error', code: 'node_disconnected' });
    await reading;
    expect(seen.at(-1)).toBe('error');
    expect(runtime.service.inFlightRuns).toBe(0);
    await waitUntil(() => runtime.registry.size === 0, 5000, 'node removed');
    expect(runtime.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    // The node's discovery report ('discovered') may arrive in between: it is not a connection change.
    expect(nodeEvents.map((event) => event.kind).filter((kind) => kind !== 'discovered')).toEqual([
      'connected',
      'disconnected',
    ]);
  });

  it('rejects a node with a wrong token; the node exits non-zero printing the edge reason', async () => {
    const port = await freePort();
    const { runtime } = await startEdge(await tempDir('iop-e2e-edge-'), port);
    await runtime.store.register('test-node');
    const node = startNode(port, 'iop_wrong_token', await tempDir('iop-e2e-node-'));
    const code = await node.exited;
    expect(code).not.toBe(0);
    expect(node.output()).toContain("invalid token for node 'test-node'");
    expect(runtime.registry.size).toBe(0);
  });

  it('a node re-registers by itself after the edge restarts', async () => {
    const port = await freePort();
    const dataDir = await tempDir('iop-e2e-edge-');
    const first = await startEdge(dataDir, port);
    const { token } = await first.runtime.store.register('test-node');
    const node = startNode(port, token, await tempDir('iop-e2e-node-'));
    await waitUntil(() => first.runtime.registry.size === 1, 15_000, `first registration:\n${node.output()}`);
    await first.runtime.stop('shutdown');

    const second = await startEdge(dataDir, port);
    await waitUntil(() => second.runtime.registry.size === 1, 15_000, `re-registration:\n${node.output()}`);
    expect(second.nodeEvents[0]).toMatchObject({
      kind: 'connected',
      nodeId: 'test-node',
      reason: 'registered',
    });
    const handle = await second.runtime.service.submitRun(
      ...prompt('Convert token iop_again and reply only with converted token'),
    );
    await expect(handle.done).resolves.toMatchObject({ status: 'completed', detail: 'idle-timeout' });
    expect(node.child.exitCode).toBeNull();
  });
});
