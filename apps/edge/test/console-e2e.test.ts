// Cross-process end-to-end test of the ops console: a real `iop-edge console` and a real `iop-node run` (with the
// fake-cli profile) on loopback; the console is driven through stdin and its stdout must match the README
// transcript line by line (run ids ignored). Needs the built apps (`pnpm exec turbo run build`).
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { README_TRANSCRIPT } from '../src/console/test-support/readme-transcript.js';

const repo = path.resolve(import.meta.dirname, '../../..');
const edgeMain = path.join(repo, 'apps/edge/dist/main.js');
const nodeMain = path.join(repo, 'apps/node/dist/main.js');
const run = promisify(execFile);

const TRANSCRIPT = README_TRANSCRIPT;
// The last transcript entry (/exit) is sent after a second phase (node killed mid-run), see below.

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Collects a child's output as lines and lets the test wait for one. */
class Output {
  text = '';
  constructor(stream: NodeJS.ReadableStream | null) {
    stream?.on('data', (chunk: Buffer) => {
      this.text += chunk.toString('utf8');
    });
  }
  lines(): string[] {
    return this.text.split('\n').filter((line, index, all) => index < all.length - 1 || line !== '');
  }
  async waitFor(pattern: RegExp, timeoutMs: number, context: () => string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.lines().some((line) => pattern.test(line))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}\n${context()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function exited(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`process ${child.pid} did not exit in ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

function stop(child: ChildProcess | undefined): Promise<unknown> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.kill('SIGTERM');
  return exited(child, 5000).catch(() => child.kill('SIGKILL'));
}

describe('iop-edge console end to end', () => {
  let dir: string;
  let configPath: string;
  let edgeAddress: string;
  let adminAddress: string;
  let edge: ChildProcess | undefined;
  let nodeAgent: ChildProcess | undefined;

  beforeAll(async () => {
    for (const main of [edgeMain, nodeMain]) {
      if (!existsSync(main)) throw new Error(`${main} is missing: build first (pnpm exec turbo run build)`);
    }
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-console-e2e-'));
    // The example config with private ports and data dir: every loopback listener gets a free port.
    let yaml = await readFile(path.join(repo, 'configs/edge.yaml'), 'utf8');
    const ports = new Map<string, number>();
    for (const match of yaml.matchAll(/listen: '127\.0\.0\.1:(\d+)'/g)) {
      const original = match[1] ?? '';
      if (!ports.has(original)) ports.set(original, await freePort());
    }
    for (const [original, port] of ports)
      yaml = yaml.replaceAll(`127.0.0.1:${original}'`, `127.0.0.1:${port}'`);
    yaml = yaml.replace(/^( {2}data_dir:).*$/m, `$1 '${path.join(dir, 'edge-data')}'`);
    configPath = path.join(dir, 'edge.yaml');
    await writeFile(configPath, yaml);
    edgeAddress = `127.0.0.1:${ports.get('19090')}`;
    adminAddress = `127.0.0.1:${ports.get('19093')}`;
  });

  afterAll(async () => {
    await Promise.all([stop(edge), stop(nodeAgent)]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('drives the README transcript through stdin against a real node', async () => {
    const registered = await run(
      process.execPath,
      [edgeMain, 'node', 'register', 'test-node', '--config', configPath, '--json'],
      {
        cwd: repo,
      },
    );
    const { token } = JSON.parse(registered.stdout) as { token: string };
    const tokenFile = path.join(dir, 'test-node.token');
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });

    edge = spawn(process.execPath, [edgeMain, 'console', '--config', configPath], {
      cwd: repo,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const screen = new Output(edge.stdout);
    const edgeLog = new Output(edge.stderr);
    const nodeLog = new Output(null);
    const context = (): string =>
      `--- console stdout ---\n${screen.text}\n--- edge stderr ---\n${edgeLog.text}\n--- node ---\n${nodeLog.text}`;

    // Start the node once the edge accepts connections (the node only retries after a first registration).
    await screen.waitFor(/^type \/help for commands/, 15_000, context);
    const transportLine = screen.lines().find((line) => line.startsWith('  node transport'));
    expect(transportLine?.trim().split(/\s+/).at(-1)).toBe(edgeAddress);
    // The admin surface is listed in the banner when the runtime's default surfaces include it.
    const adminListed = screen.lines().some((line) => /^ {2}admin\s/.test(line));
    nodeAgent = spawn(
      process.execPath,
      [
        nodeMain,
        'run',
        '--edge',
        edgeAddress,
        '--node-id',
        'test-node',
        '--token-file',
        tokenFile,
        '--data-dir',
        path.join(dir, 'node-data'),
      ],
      { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    nodeAgent.stdout?.on('data', (chunk: Buffer) => (nodeLog.text += chunk.toString('utf8')));
    nodeAgent.stderr?.on('data', (chunk: Buffer) => (nodeLog.text += chunk.toString('utf8')));
    await screen.waitFor(/^\[node0-evt\] connected node=test-node reason=registered$/, 15_000, context);

    if (adminListed) {
      const listed = await run(
        process.execPath,
        [edgeMain, 'nodes', 'list', '--json', '--addr', adminAddress],
        {
          cwd: repo,
        },
      );
      const nodes = (JSON.parse(listed.stdout) as { nodes: { node_id: string }[] }).nodes;
      expect(nodes.map((entry) => entry.node_id)).toEqual(['test-node']);
    }

    const commands = TRANSCRIPT.filter((entry) => entry.startsWith('edge> ')).map((entry) => entry.slice(6));
    for (const line of commands.filter((entry) => entry !== '/exit')) edge.stdin?.write(`${line}\n`);
    await screen.waitFor(/^error: node reported error: status check not supported/, 30_000, context);

    // The node dies in the middle of a background run: the run ends with an error event and the node's
    // disconnect is printed with its reason.
    edge.stdin?.write('/background on\nConvert token iop_manual_three and reply only with converted token\n');
    await screen.waitFor(/^\[node0-msg\] IOP_MANUAL_THREE_TAIL$/, 15_000, context);
    nodeAgent.kill('SIGKILL');
    await screen.waitFor(
      /^\[node0-evt\] error run_id=manual-\S+ code=node_disconnected message=".+"$/,
      15_000,
      context,
    );
    await screen.waitFor(/^\[node0-evt\] disconnected node=test-node reason=\S+$/, 15_000, context);
    edge.stdin?.write('/nodes\n/exit\n');

    const code = await exited(edge, 30_000).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${context()}`);
    });
    // The node's discovery report prints whenever its probes finish (here: nothing found); the README transcript
    // leaves it out, so it is checked on its own.
    const discovered = /^\[node0-evt\] discovered node=test-node /;
    expect(screen.lines().filter((line) => discovered.test(line)).length).toBeGreaterThan(0);
    const lines = screen
      .lines()
      .filter((line) => !discovered.test(line))
      .map((line) => line.replace(/run_id=manual-\S+/g, 'run_id=manual-...'));
    const start = lines.indexOf(TRANSCRIPT[0] ?? '');
    if (start < 0) throw new Error(`no connected line\n${context()}`);
    const transcriptEnd = start + TRANSCRIPT.length - 1;
    expect(lines.slice(start, transcriptEnd)).toEqual(TRANSCRIPT.slice(0, -1));
    const tail = lines.slice(transcriptEnd);
    expect(tail.slice(0, 7)).toEqual([
      'edge> /background on',
      'background on',
      'edge> Convert token iop_manual_three and reply only with converted token',
      '[edge] sent run_id=manual-... node=test-node adapter=cli target=fake-cli session=default background=true',
      '[node0-evt] start run_id=manual-...',
      '[node0-msg] IOP_MANUAL_THREE_OK',
      '[node0-msg] IOP_MANUAL_THREE_TAIL',
    ]);
    expect(tail.slice(7, 9).sort()).toEqual([
      expect.stringMatching(/^\[node0-evt\] disconnected node=test-node reason=\S+$/),
      expect.stringMatching(/^\[node0-evt\] error run_id=manual-\.\.\. code=node_disconnected message=/),
    ]);
    expect(tail.slice(9)).toEqual(['edge> /nodes', 'no nodes connected', 'edge> /exit']);
    expect(code).toBe(0);
  }, 60_000);
});
