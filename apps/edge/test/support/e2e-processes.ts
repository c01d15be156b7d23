// Process plumbing for the cross-process e2e suites: a real `iop-edge serve` and real `iop-node run` processes,
// both started from the TypeScript sources through the test hooks (apps/node/test/support; no build needed),
// with captured output, JSON log lines, exit promises and a group that kills whatever is still running. Every
// wait is bounded; every port is chosen at run time on 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const registerHooks = path.join(repoRoot, 'apps/node/test/support/register-ts.mjs');
const nodeMain = path.join(repoRoot, 'apps/node/src/main.ts');
const edgeMain = path.join(repoRoot, 'apps/edge/src/main.ts');

/** Polls `predicate` every 20 ms; throws with `what` after `timeoutMs`. */
export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string | (() => string | Promise<string>),
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) {
      const description = typeof what === 'string' ? what : await what();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    }
    await sleep(20);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A free loopback port (closed again at once; fine for tests that bind it a moment later). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process with its output captured. */
export class TestProcess {
  private stdoutText = '';
  private stderrText = '';
  readonly exited: Promise<ExitStatus>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.stdoutText += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.stderrText += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  stdout(): string {
    return this.stdoutText;
  }

  stderr(): string {
    return this.stderrText;
  }

  /** The JSON log records the process wrote to stderr (non-JSON lines skipped). */
  logRecords(): Record<string, unknown>[] {
    const records: Record<string, unknown>[] = [];
    for (const line of this.stderrText.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        records.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a line cut by a kill; ignore
      }
    }
    return records;
  }

  describe(): string {
    return `${this.name} stdout:\n${this.stdoutText.slice(-3000)}\n${this.name} stderr:\n${this.stderrText.slice(-3000)}`;
  }

  /** Sends `signal`; SIGKILL after `graceMs` if it is still running. Resolves when it exited. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<ExitStatus> {
    if (this.running) {
      this.child.kill(signal);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      const status = await this.exited;
      clearTimeout(timer);
      return status;
    }
    return this.exited;
  }
}

/**
 * Owns processes and temp dirs of a suite; `close()` stops and removes them all (call in afterAll). Processes get
 * SIGTERM first: a node stops the CLI sessions and servers it started on SIGTERM, while a SIGKILLed node leaves
 * them running as orphans (an opencode server outlived every e2e run that way).
 */
export class ProcessGroup {
  private readonly processes: TestProcess[] = [];
  private readonly dirs: string[] = [];

  async tempDir(prefix: string): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }

  spawnTs(
    name: string,
    entry: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
    cwd = repoRoot,
    stdin: 'ignore' | 'pipe' = 'ignore',
  ): TestProcess {
    const child = spawn(process.execPath, ['--import', registerHooks, entry, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: [stdin, 'pipe', 'pipe'],
    });
    const started = new TestProcess(name, child);
    this.processes.push(started);
    return started;
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.splice(0).map((entry) => entry.stop('SIGTERM', 3000)));
    await Promise.all(this.dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

export interface EdgeAddresses {
  transport: string;
  openai: string;
  metrics: string;
  admin: string;
  /** Empty when the A2A surface is off. */
  a2a: string;
}

export interface EdgeProcess extends TestProcess {
  addresses: EdgeAddresses;
  configPath: string;
}

/**
 * Writes `config` (plain data; JSON is valid YAML) to `<dir>/edge.yaml`, starts the edge and waits for its
 * listening lines. `env`: extra environment of the edge process (e.g. clockOffsetEnv).
 */
export async function startEdgeProcess(
  group: ProcessGroup,
  dir: string,
  config: Record<string, unknown>,
  name = 'edge',
  command: 'serve' | 'console' = 'serve',
  env: NodeJS.ProcessEnv = {},
): Promise<EdgeProcess> {
  const configPath = path.join(dir, 'edge.yaml');
  await writeFile(configPath, JSON.stringify(config, null, 2));
  return startEdgeWithConfigFile(group, dir, configPath, name, command, env);
}

/**
 * The environment that runs a process's wall clock `offsetMs` ahead (Date.now, which the edge's system clock
 * reads): a preload module, for tests of clock skew between edges.
 */
export function clockOffsetEnv(offsetMs: number): NodeJS.ProcessEnv {
  const preload = pathToFileURL(path.join(repoRoot, 'apps/edge/test/support/clock-offset-preload.mjs')).href;
  return {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`.trim(),
    IOP_TEST_CLOCK_OFFSET_MS: String(offsetMs),
  };
}

/** Starts the edge on an edge.yaml the test wrote itself (in `dir`, its working directory) and waits for its listening lines. */
export async function startEdgeWithConfigFile(
  group: ProcessGroup,
  dir: string,
  configPath: string,
  name = 'edge',
  command: 'serve' | 'console' = 'serve',
  env: NodeJS.ProcessEnv = {},
): Promise<EdgeProcess> {
  const edge = group.spawnTs(
    name,
    edgeMain,
    [command, '--config', configPath],
    env,
    dir,
    command === 'console' ? 'pipe' : 'ignore',
  );
  await waitUntil(
    () => /^ {2}admin\s+\S+/m.test(edge.stdout()) || !edge.running,
    30_000,
    () => `edge listening lines\n${edge.describe()}`,
  );
  if (!edge.running) throw new Error(`edge exited during startup\n${edge.describe()}`);
  const line = (label: string): string => {
    const match = new RegExp(`^ {2}${label}\\s+(\\S+)`, 'm').exec(edge.stdout());
    return match?.[1] ?? '';
  };
  const addresses: EdgeAddresses = {
    transport: line('node transport'),
    openai: line('openai'),
    metrics: line('metrics'),
    admin: line('admin'),
    a2a: line('a2a'),
  };
  return Object.assign(edge, { addresses, configPath });
}

export interface NodeProcessOptions {
  edge: string;
  nodeId: string;
  token: string;
  dataDir: string;
  retryIntervalMs?: number;
  maxRetries?: number;
  /** Extra environment of the node process (e.g. IOP_OTLP_ENDPOINT). */
  env?: Record<string, string>;
  /** Extra `iop-node run` flags (e.g. --edge-fingerprint, `--image-fetch-allow 127.0.0.1`). */
  args?: string[];
}

/** Starts `iop-node run` against `edge` (host:port) with JSON logs on stderr. */
export function startNodeProcess(group: ProcessGroup, options: NodeProcessOptions): TestProcess {
  return group.spawnTs(
    options.nodeId,
    nodeMain,
    [
      'run',
      '--edge',
      options.edge,
      '--node-id',
      options.nodeId,
      '--data-dir',
      options.dataDir,
      '--retry-interval-ms',
      String(options.retryIntervalMs ?? 200),
      '--max-retries',
      String(options.maxRetries ?? 200),
      '--log-format',
      'json',
      ...(options.args ?? []),
    ],
    { ...options.env, IOP_NODE_TOKEN: options.token },
  );
}

export interface CommandResult {
  status: ExitStatus;
  stdout: string;
  stderr: string;
}

async function runToCompletion(
  group: ProcessGroup,
  name: string,
  entry: string,
  args: string[],
  timeoutMs: number,
  cwd?: string,
): Promise<CommandResult> {
  const command = group.spawnTs(name, entry, args, {}, cwd);
  const timer = setTimeout(() => command.child.kill('SIGKILL'), timeoutMs);
  const status = await command.exited;
  clearTimeout(timer);
  return { status, stdout: command.stdout(), stderr: command.stderr() };
}

/** Runs `iop-node <args>` to completion (e.g. `history --json`), bounded by `timeoutMs`. */
export function runNodeCommand(
  group: ProcessGroup,
  args: string[],
  timeoutMs = 30_000,
): Promise<CommandResult> {
  return runToCompletion(group, `iop-node ${args[0] ?? ''}`, nodeMain, args, timeoutMs);
}

/** Runs `iop-edge <args>` to completion (e.g. `config refresh`), bounded by `timeoutMs`, in `cwd` (the repo). */
export function runEdgeCommand(
  group: ProcessGroup,
  args: string[],
  timeoutMs = 30_000,
  cwd?: string,
): Promise<CommandResult> {
  return runToCompletion(group, `iop-edge ${args[0] ?? ''}`, edgeMain, args, timeoutMs, cwd);
}

/** `GET /metrics` of the edge, parsed into `name{labels}` → value. */
export async function scrapeMetrics(metricsAddress: string): Promise<Map<string, number>> {
  const base = metricsAddress.startsWith('http') ? metricsAddress : `http://${metricsAddress}`;
  const response = await fetch(`${base}/metrics`);
  const text = await response.text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

/** Sum of every sample of `name` whose labels include all `labels` (e.g. `{ node: 'n1' }`). */
export function metricSum(
  samples: Map<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const [key, value] of samples) {
    if (key !== name && !key.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([label, wanted]) => key.includes(`${label}="${wanted}"`))) sum += value;
  }
  return sum;
}

/** Waits until `edge` answers a chat completion of `model` (its node registered and its providers ready). */
export async function waitUntilServed(edge: EdgeProcess, model: string, timeoutMs = 20_000): Promise<void> {
  await waitUntil(
    async () => {
      const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ready' }] }),
      });
      return response.status === 200;
    },
    timeoutMs,
    () => `edge serves\n${edge.describe()}`,
  );
}
