// Issue 30: an agent cannot read its node's secrets. A real `iop-node run` as root, against a fake edge in this
// process, runs a stand-in CLI (`cat`) as a `run_as` user this test creates: `cat` on the node's token file (and
// its identity key) gets "Permission denied", while a file of the agent user's own is read. Needs root and
// useradd; skipped with one line otherwise. A second run repeats it the way a service install runs the node:
// root bounded to CAP_SETUID CAP_SETGID CAP_KILL CAP_DAC_READ_SEARCH (setpriv, like the unit's
// CapabilityBoundingSet), the agent user from `--agent-user` rather than the config, the workspaces dir (0711,
// the agent's) as its working directory, the agent's default workspace a directory the agent user made in it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CancelAction, create, envelope, type NodeConfigPayload, type RunEventPart } from '@iop/wire';
import { FakeEdge, waitFor } from '../src/link/test-support/fake-edge.js';
import { cliNodePayload } from './support/cli-node-payload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const register = path.join(here, 'support/register-ts.mjs');
const main = path.resolve(here, '../src/main.ts');
const USER = `iop-agent-t${process.pid % 100000}`;

/** Creates the agent user; undefined (with the reason) when this machine cannot. */
function createAgentUser(home: string): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  try {
    execFileSync('useradd', ['--system', '--home-dir', home, '--shell', '/usr/sbin/nologin', USER], {
      stdio: 'pipe',
    });
  } catch (error) {
    return `useradd failed: ${String(error)}`;
  }
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
  fs.chownSync(home, uid, gid);
  return undefined;
}

function payload(runAs: string): NodeConfigPayload {
  return cliNodePayload({
    maxConcurrency: 2,
    healthProbeIntervalMs: 0,
    runAs,
    profiles: {
      cat: create.cliProfile({ command: 'cat', args: ['{prompt}'], mode: 'oneshot' }),
      sleep: create.cliProfile({ command: 'sleep', args: ['{prompt}'], mode: 'oneshot' }),
      write: create.cliProfile({
        command: 'sh',
        args: ['-c', 'echo "$2" > agent-made.txt && cat agent-made.txt', 'sh', '{prompt}'],
        mode: 'oneshot',
      }),
    },
  });
}

function runOutput(edge: FakeEdge, runId: string): { parts: RunEventPart[]; text: string } {
  const parts = edge.runParts(runId);
  const text = parts
    .map((part) => (part.type === 'text-delta' ? part.text : part.type === 'error' ? part.message : ''))
    .join('');
  return { parts, text };
}

const prompt = (text: string) => [create.chatMessage({ role: 'user', content: text })];

/** A fake edge that accepts the node and hands it the CLI config with `runAs`. */
function startFakeEdge(runAs: string): Promise<FakeEdge> {
  return FakeEdge.start({
    answer: () => ({
      accepted: true,
      heartbeatIntervalMs: 1000,
      heartbeatTimeoutMs: 10_000,
      config: payload(runAs),
    }),
  });
}

/** The node process's arguments after `node`: `iop-node run` against `edge` from the TypeScript sources. */
function nodeRunArgs(edge: FakeEdge, dataDir: string, tokenFile: string, extra: string[] = []): string[] {
  return [
    '--import',
    register,
    main,
    'run',
    '--edge',
    `127.0.0.1:${edge.port}`,
    '--node-id',
    'test-node',
    '--data-dir',
    dataDir,
    '--token-file',
    tokenFile,
    ...extra,
    '--log-format',
    'json',
  ];
}

/** Sends run `runId` to profile `target` and waits for its end; its text (or error message). */
async function ask(edge: FakeEdge, log: () => string, runId: string, target: string, text: string) {
  await edge
    .latest()
    .send(envelope.runRequest({ runId, adapter: 'cli', target, sessionId: runId, messages: prompt(text) }));
  await waitFor(
    () => runOutput(edge, runId).parts.some((part) => part.type === 'complete' || part.type === 'error'),
    15_000,
    `end of ${runId} (${log()})`,
  );
  return runOutput(edge, runId).text;
}

/** Processes the agent user runs now. */
function agentProcesses(): number {
  try {
    return execFileSync('pgrep', ['-u', USER]).toString().trim().split('\n').filter(Boolean).length;
  } catch {
    return 0; // pgrep exits 1 when nothing matches
  }
}

let skipReason: string | undefined;
let dir: string;
let home: string;
let edge: FakeEdge | undefined;
let node: ChildProcess | undefined;
let stderr = '';
let serviceEdge: FakeEdge | undefined;
let serviceNode: ChildProcess | undefined;

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-agent-user-'));
  // Traversable by the agent user (its home is inside); the node's data dir in it is 0700 as always.
  fs.chmodSync(dir, 0o755);
  home = path.join(dir, 'agent-home');
  skipReason = createAgentUser(home);
  if (skipReason) process.stdout.write(`[agent-user] skipped: ${skipReason}\n`);
});

afterAll(async () => {
  await stop(node);
  await stop(serviceNode);
  await edge?.close();
  await serviceEdge?.close();
  if (!skipReason) execFileSync('userdel', [USER], { stdio: 'pipe' });
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('CLI agents as a run_as user (node run as root)', () => {
  it('gets "Permission denied" reading the node token and identity key, reads its own files, and is cancellable', async () => {
    if (skipReason) return;
    const dataDir = path.join(dir, 'node-data');
    fs.mkdirSync(dataDir, { mode: 0o700 });
    const tokenFile = path.join(dataDir, 'node.token');
    fs.writeFileSync(tokenFile, 'iop_agent_user_secret_token\n', { mode: 0o600 });
    const ownFile = path.join(home, 'notes.txt');
    fs.writeFileSync(ownFile, 'agent-owned-notes\n');
    fs.chownSync(ownFile, fs.statSync(home).uid, fs.statSync(home).gid);

    edge = await startFakeEdge(USER);
    // The node's working directory (the agents' default workspace) is the agent's home.
    node = spawn(process.execPath, nodeRunArgs(edge, dataDir, tokenFile), {
      cwd: home,
      env: { ...process.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    node.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const current = edge;
    await waitFor(() => current.registrations.length === 1, 20_000, `registration (${stderr})`);

    const askCat = (runId: string, text: string) => ask(current, () => stderr, runId, 'cat', text);

    const token = await askCat('read-token', tokenFile);
    expect(token).toContain('Permission denied');
    expect(token).not.toContain('iop_agent_user_secret_token');
    const key = await askCat('read-key', path.join(dataDir, 'identity.key'));
    expect(key).toContain('Permission denied');
    expect(key).not.toContain('PRIVATE KEY');
    expect(await askCat('read-own', ownFile)).toContain('agent-owned-notes');

    // Cancelling kills the agent's process tree although it runs as another user.
    await current.latest().send(
      envelope.runRequest({
        runId: 'sleeper',
        adapter: 'cli',
        target: 'sleep',
        sessionId: 'sleeper',
        messages: prompt('30'),
      }),
    );
    await waitFor(() => agentProcesses() > 0, 10_000, `the agent's sleep (${stderr})`);
    await current.latest().send(
      envelope.cancelRequest({
        action: CancelAction.CANCEL_ACTION_CANCEL_RUN,
        runId: 'sleeper',
        reason: 'test',
      }),
    );
    await waitFor(
      () => runOutput(current, 'sleeper').parts.some((part) => part.type === 'cancelled'),
      10_000,
      `sleeper cancelled (${stderr})`,
    );
    await waitFor(() => agentProcesses() === 0, 10_000, "the agent's processes gone");
  }, 60_000);

  it('works as a service install runs it: root with four capabilities, --agent-user, workspaces dir', async () => {
    if (skipReason) return;
    const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((file) => fs.existsSync(file));
    if (!setpriv) {
      process.stdout.write('[agent-user] service-mode case skipped: setpriv not found\n');
      return;
    }
    const dataDir = path.join(dir, 'service-data');
    fs.mkdirSync(dataDir, { mode: 0o700 });
    const tokenFile = path.join(dir, 'service.token');
    fs.writeFileSync(tokenFile, 'iop_service_secret_token\n', { mode: 0o600 });
    const workspaces = path.join(dir, 'workspaces');
    fs.mkdirSync(workspaces);
    fs.chownSync(workspaces, fs.statSync(home).uid, fs.statSync(home).gid);
    fs.chmodSync(workspaces, 0o711);

    serviceEdge = await startFakeEdge('');
    let serviceStderr = '';
    serviceNode = spawn(
      setpriv,
      [
        '--bounding-set=-all,+setuid,+setgid,+kill,+dac_read_search',
        '--inh-caps=-all',
        process.execPath,
        ...nodeRunArgs(serviceEdge, dataDir, tokenFile, ['--agent-user', USER]),
      ],
      { cwd: workspaces, env: { ...process.env }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    serviceNode.stderr?.on('data', (chunk: Buffer) => (serviceStderr += chunk.toString()));
    const current = serviceEdge;
    await waitFor(() => current.registrations.length === 1, 20_000, `registration (${serviceStderr})`);
    const askService = (runId: string, target: string, text: string) =>
      ask(current, () => serviceStderr, runId, target, text);
    const token = await askService('svc-token', 'cat', tokenFile);
    expect(token).toContain('Permission denied');
    expect(token).not.toContain('iop_service_secret_token');
    expect(await askService('svc-key', 'cat', path.join(dataDir, 'identity.key'))).toContain(
      'Permission denied',
    );
    // The node made its identity key and history in its data dir (root's, without CAP_DAC_OVERRIDE).
    expect(fs.statSync(path.join(dataDir, 'identity.key')).uid).toBe(0);
    // The agent works in a directory of its own under the workspaces dir (an anonymous run's default workspace,
    // made by the agent user: the node may not write there) and what it makes is its own ($1 is the
    // end-of-options '--' before the prompt).
    expect(await askService('svc-write', 'write', 'workspace-ok')).toContain('workspace-ok');
    const own = path.join(workspaces, '.iop-workspaces', 'anonymous');
    expect(fs.statSync(own).mode & 0o777).toBe(0o700);
    expect(fs.statSync(own).uid).toBe(fs.statSync(home).uid);
    expect(fs.statSync(path.join(own, 'agent-made.txt')).uid).toBe(fs.statSync(home).uid);
  }, 60_000);
});
