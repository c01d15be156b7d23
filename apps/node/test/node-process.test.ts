// Cross-process tests of the real `iop-node` entry point (TypeScript sources run through test/support hooks)
// against a fake edge in this process: a real run through the cli adapter and the fake-cli profile, clean
// shutdown on SIGTERM, and a SIGKILL mid-run that leaves the history intact with the run `interrupted`.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { envelope, type NodeConfigPayload } from '@iop/wire';
import { FakeEdge, waitFor } from '../src/link/test-support/fake-edge.js';
import { cliNodePayload } from './support/cli-node-payload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const appDir = path.resolve(here, '..');
const repoRoot = path.resolve(appDir, '../..');
const register = path.join(here, 'support/register-ts.mjs');
const main = path.join(appDir, 'src/main.ts');

function payload(idleTimeoutMs: number): NodeConfigPayload {
  return cliNodePayload({
    maxConcurrency: 4,
    healthProbeIntervalMs: 60_000,
    runAs: '',
    profiles: {
      'fake-cli': {
        command: 'bin/iop-fake-cli',
        args: [],
        env: {},
        mode: 'persistent',
        persistent: true,
        terminal: false,
        resumeArgs: [],
        outputFormat: '',
        idleTimeoutMs,
        requestTimeoutMs: 0,
        resultGraceMs: 0,
      },
    },
  });
}

interface NodeProcess {
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startNode(args: string[], env: NodeJS.ProcessEnv = {}): NodeProcess {
  const child = spawn(process.execPath, ['--import', register, main, ...args], {
    cwd: repoRoot,
    env: { ...process.env, IOP_LOG_FORMAT: 'json', IOP_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => stderr, exit };
}

const prompt = (text: string) => [
  {
    role: 'user',
    content: text,
    toolCalls: [],
    toolCallId: '',
    name: '',
    images: [],
    imageUrls: [],
    reasoning: '',
  },
];

describe('iop-node process', () => {
  let dir: string;
  let edge: FakeEdge;
  const processes: NodeProcess[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-node-process-'));
  });
  afterEach(async () => {
    for (const node of processes.splice(0)) {
      if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
      await node.exit;
    }
    await edge?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startEdge(idleTimeoutMs: number): Promise<void> {
    edge = await FakeEdge.start({
      answer: () => ({
        accepted: true,
        heartbeatIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        config: payload(idleTimeoutMs),
      }),
    });
  }

  /** `iop-node history --json` over the test's data dir (read-only), parsed. */
  async function historyListing(): Promise<Array<Record<string, unknown>>> {
    const history = startNode(['history', '--json', '--data-dir', dir]);
    processes.push(history);
    let out = '';
    history.child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    expect((await history.exit).code).toBe(0);
    return JSON.parse(out) as Array<Record<string, unknown>>;
  }

  function launch(): NodeProcess {
    const node = startNode(
      ['run', '--edge', `127.0.0.1:${edge.port}`, '--node-id', 'test-node', '--data-dir', dir],
      { IOP_NODE_TOKEN: 'e2e-token' },
    );
    processes.push(node);
    return node;
  }

  it('serves a fake-cli run end to end and exits 0 with goodbye shutdown on SIGTERM', async () => {
    // Generous idle timeout: on a loaded machine the TAIL line can lag the OK line by hundreds of ms.
    await startEdge(1500);
    const node = launch();
    await waitFor(() => edge.registrations.length === 1, 15_000, `registration (${node.stderr()})`);
    expect(edge.registrations[0]).toMatchObject({ nodeId: 'test-node', token: 'e2e-token' });
    await edge.latest().send(
      envelope.runRequest({
        runId: 'manual-1',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        messages: prompt('Convert token iop_manual_one and reply only with converted token'),
      }),
    );
    await waitFor(
      () => edge.runParts('manual-1').some((part) => part.type === 'complete' || part.type === 'error'),
      10_000,
      `run end (${node.stderr()})`,
    );
    const parts = edge.runParts('manual-1');
    expect(parts[0]).toMatchObject({ type: 'start', target: 'fake-cli', sessionId: 'default' });
    const text = parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : [])).join('');
    expect(text).toBe('IOP_MANUAL_ONE_OK\nIOP_MANUAL_ONE_TAIL\n');
    expect(parts.at(-1)).toMatchObject({ type: 'complete', detail: 'idle-timeout' });

    node.child.kill('SIGTERM');
    expect(await node.exit).toEqual({ code: 0, signal: null });
    const goodbye = edge.received.find((entry) => entry.message.msg?.$case === 'goodbye');
    expect(goodbye?.message.msg).toMatchObject({ goodbye: { reason: 'shutdown' } });
  });

  it('leaves an intact history with the run interrupted after SIGKILL mid-run', async () => {
    await startEdge(60_000);
    const node = launch();
    await waitFor(() => edge.registrations.length === 1, 15_000, `registration (${node.stderr()})`);
    await edge.latest().send(
      envelope.runRequest({
        runId: 'killed-run',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        messages: prompt('Convert token iop_crash and reply only with converted token'),
      }),
    );
    await waitFor(
      () => edge.runParts('killed-run').some((part) => part.type === 'text-delta'),
      10_000,
      `first output (${node.stderr()})`,
    );
    // A run's start is committed by the history's writer thread shortly after the output began (what a kill -9
    // may lose is the writes still queued: sqlite-run-history.ts); on a loaded machine the commit can trail the
    // first output, so the kill waits until the listing shows the run — it is then cut mid-run, as intended.
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      const listed = await historyListing();
      if (listed.some((run) => run['run_id'] === 'killed-run')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    node.child.kill('SIGKILL');
    expect((await node.exit).signal).toBe('SIGKILL');

    // Read-only listing: the run still looks running until an agent reopens the history.
    expect(await historyListing()).toMatchObject([{ run_id: 'killed-run', status: 'running' }]);

    const restarted = launch();
    await waitFor(
      () => edge.registrations.length === 2,
      15_000,
      `second registration (${restarted.stderr()})`,
    );
    expect(restarted.stderr()).toContain('marked interrupted');
    restarted.child.kill('SIGTERM');
    expect((await restarted.exit).code).toBe(0);

    const after = startNode(['history', '--json', '--data-dir', dir]);
    processes.push(after);
    let listing = '';
    after.child.stdout!.on('data', (chunk: Buffer) => (listing += chunk.toString()));
    expect((await after.exit).code).toBe(0);
    const [run] = JSON.parse(listing) as Array<Record<string, unknown>>;
    expect(run).toMatchObject({
      run_id: 'killed-run',
      status: 'interrupted',
      adapter: 'cli',
      target: 'fake-cli',
    });
  });
});
