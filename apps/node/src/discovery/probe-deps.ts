// What the discovery probes may touch, as plain injectable functions: HTTP on loopback or configured URLs
// (http), executables found on PATH (which) and run with a short deadline (exec), the environment the node was
// started with, and the host's own facts. Tests pass fakes; `systemProbeDeps` is the real thing.
import { systemClock } from '@iop/clock';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { findExecutable } from '../adapters/cli/command-lookup.js';
import type { HttpClient } from '../adapters/http/http-client.js';
import { createNodeHttpClient } from '../adapters/http/node-http-client.js';

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** Exit code; null when the process was killed (deadline) or could not start. */
  code: number | null;
  /** Set when the deadline killed it. */
  timedOut: boolean;
}

/** Runs `file args` with no shell, bounded by `timeoutMs` and a small output cap. Never rejects. */
export type ExecFunction = (
  file: string,
  args: readonly string[],
  options: { timeoutMs: number; env: NodeJS.ProcessEnv; signal: AbortSignal },
) => Promise<ExecResult>;

export interface HostFacts {
  platform: string;
  arch: string;
  cpuCores: number;
  memoryBytes: number;
  /** CLI agents run as a user of their own (`--agent-user` on a node that can switch users); absent = no. */
  agentsSeparateUser?: boolean;
  /** With `agentsSeparateUser`: the user the agents run as and the directory their runs default to. */
  agentUser?: string;
  agentWorkspaceRoot?: string;
}

export interface ProbeDeps {
  /** GETs to model servers: the node's own HTTP client (undici's fetch fails to connect under Wine, issue 33). */
  http: HttpClient;
  exec: ExecFunction;
  /** The executable `name` resolves to on PATH, or undefined. */
  which: (name: string, searchPath: string | undefined) => string | undefined;
  env: NodeJS.ProcessEnv;
  host: () => HostFacts;
}

/** Output kept from a probed process: a version line or a GPU table is far smaller. */
export const EXEC_MAX_OUTPUT_BYTES = 64 * 1024;

/**
 * Spawns without a shell and settles at exit or at the deadline, whichever is first: at the deadline the process
 * and its group are killed and its pipes dropped, so a grandchild cannot hold the probe open.
 */
export const execBounded: ExecFunction = (file, args, options) =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    let child: ChildProcess;
    const finish = (code: number | null, timedOut: boolean) => {
      if (settled) return;
      settled = true;
      systemClock.clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      if (timedOut || code === null) {
        killTree(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
      }
      resolve({ stdout, stderr, code, timedOut });
    };
    const onAbort = () => finish(null, false);
    const timer = systemClock.setTimeout(() => finish(null, true), options.timeoutMs);
    try {
      // Its own process group (POSIX), so the deadline kills whatever it started too.
      child = spawn(file, [...args], {
        detached: process.platform !== 'win32',
        env: options.env,
        windowsHide: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch {
      // e.g. EINVAL for a .cmd shim on Windows, which cannot run without a shell: found, but no version.
      settled = true;
      systemClock.clearTimeout(timer);
      resolve({ stdout: '', stderr: '', code: null, timedOut: false });
      return;
    }
    options.signal.addEventListener('abort', onAbort, { once: true });
    const keep = (current: string, chunk: Buffer) =>
      current.length >= EXEC_MAX_OUTPUT_BYTES
        ? current
        : (current + chunk.toString('utf8')).slice(0, EXEC_MAX_OUTPUT_BYTES);
    child.stdout?.on('data', (chunk: Buffer) => (stdout = keep(stdout, chunk)));
    child.stderr?.on('data', (chunk: Buffer) => (stderr = keep(stderr, chunk)));
    child.once('error', () => finish(null, false));
    child.once('close', (code) => finish(code, false));
    if (options.signal.aborted) onAbort();
  });

function killTree(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * The real probes; `http` defaults to a client of discovery's own (its idle sockets never hold the process).
 * `agentUser` is `iop-node run --agent-user`: agents run as it only when this process is root. `cwd` is the
 * node's working directory, which is the CLI agents' default workspace (under the service unit: its workspaces dir).
 */
export function systemProbeDeps(
  env: NodeJS.ProcessEnv,
  http: HttpClient = createNodeHttpClient({ clock: systemClock }),
  agentUser?: string,
  cwd: string = process.cwd(),
): ProbeDeps {
  const agentsSeparateUser = Boolean(agentUser) && process.geteuid?.() === 0;
  const agent = agentsSeparateUser && agentUser ? { agentUser, agentWorkspaceRoot: cwd } : {};
  return {
    http,
    exec: execBounded,
    which: findExecutable,
    env,
    host: () => ({
      platform: process.platform,
      arch: process.arch,
      cpuCores: os.availableParallelism?.() ?? os.cpus().length,
      memoryBytes: os.totalmem(),
      agentsSeparateUser,
      ...agent,
    }),
  };
}
