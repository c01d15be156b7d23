// Cross-process: `iop-edge serve` as a real process (apps/edge/dist, built by `make compile`) with hand-written
// fake nodes over loopback. Checks the composition root: config loading, listening line, node register against a
// running edge, rejection reasons on the wire, replaced connections, and a clean SIGTERM shutdown.
import { describe, it, expect, beforeAll, afterEach } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { RegisterRejectCode } from '@iop/wire';
import { connectFakeNode, waitUntil } from '../src/transport/test-support/fake-node.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const edgeMain = path.join(repoRoot, 'apps/edge/dist/main.js');
const run = promisify(execFile);

const CONFIG = `
edge:
  id: edge-process-test
  listen: "127.0.0.1:0"
  data_dir: ./data
  register_timeout_ms: 2000
  heartbeat_interval_ms: 500
  heartbeat_timeout_ms: 3000
logging: { level: info, format: json }
metrics: { enabled: false }
refresh: { enabled: false }
openai: { enabled: false }
a2a: { enabled: false }
nodes:
  - id: test-node
    alias: test-node
    runtime: { max_concurrency: 4 }
    adapters:
      cli:
        enabled: true
        profiles:
          fake-cli: { command: bin/iop-fake-cli, persistent: true, mode: persistent, idle_timeout_ms: 1500 }
`;

let dir: string;
let edge: ChildProcess | undefined;

beforeAll(() => {
  if (!existsSync(edgeMain)) throw new Error(`${edgeMain} is missing: run 'make compile' first`);
});

afterEach(async () => {
  if (edge && edge.exitCode === null && edge.signalCode === null) {
    const exited = new Promise((resolve) => edge?.on('exit', resolve));
    edge.kill('SIGKILL');
    await exited;
  }
  edge = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('iop-edge serve (process)', () => {
  it('accepts registered nodes, rejects bad ones with reasons, replaces connections, and stops on SIGTERM', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-serve-process-'));
    const configPath = path.join(dir, 'edge.yaml');
    await writeFile(configPath, CONFIG);
    const child = spawn(process.execPath, [edgeMain, 'serve', '--config', configPath], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    edge = child;
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitUntil(() => /node transport {2}\S+/.test(stdout), 10_000, `listening line; stderr:\n${stderr}`);
    const address = /node transport {2}(\S+)/.exec(stdout)?.[1] ?? '';

    // Registered while the edge runs: the running edge accepts the new token without a restart.
    const registered = await run(
      process.execPath,
      [edgeMain, 'node', 'register', 'test-node', '--json', '--config', configPath],
      {
        cwd: dir,
      },
    );
    const token = (JSON.parse(registered.stdout) as { token: string }).token;

    const first = await connectFakeNode(address, { nodeId: 'test-node', token });
    expect(first.response).toMatchObject({
      accepted: true,
      edgeId: 'edge-process-test',
      config: { nodeId: 'test-node' },
    });

    const wrong = await connectFakeNode(address, { nodeId: 'test-node', token: 'iop_not_it' });
    expect(wrong.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
      reason: "invalid token for node 'test-node'",
    });
    const unknown = await connectFakeNode(address, { nodeId: 'nobody', token });
    expect(unknown.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_UNKNOWN_NODE,
    });

    const second = await connectFakeNode(address, { nodeId: 'test-node', token });
    expect(second.response.accepted).toBe(true);
    expect((await first.connection.closed).reason).toBe('replaced');

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await second.connection.closed).reason).toBe('shutdown');
    expect(stdout).toContain('iop-edge stopped');
    // Every rejection is in the log with its reason; the token is never logged.
    expect(stderr).toContain('"reason":"bad-token"');
    expect(stderr).toContain('"reason":"unknown-node"');
    expect(stderr).toContain('"reason":"replaced"');
    expect(stderr).not.toContain(token);
  });

  it('exits 1 and lists the problems of an invalid config', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-serve-process-'));
    const configPath = path.join(dir, 'edge.yaml');
    await writeFile(configPath, 'edge: { listen: nope }\nnodes: [{ id: 5 }]\n');
    const failure = await run(process.execPath, [edgeMain, 'serve', '--config', configPath], {
      cwd: dir,
    }).catch((error: unknown) => error as { code: number; stderr: string });
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr).toContain('edge.listen');
  });
});
