// What the discovery probes may touch, as plain injectable functions: HTTP on loopback or configured URLs
// (fetch), executables found on PATH (which) and run with a short deadline (exec), the environment the node was
// started with, and the host's own facts. Tests pass fakes; `systemProbeDeps` is the real thing.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { findExecutable } from '../adapters/cli/command-lookup.js';

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
}

export interface ProbeDeps {
  fetch: typeof fetch;
  exec: ExecFunction;
  /** The executable `name` resolves to on PATH, or undefined. */
  which: (name: string, searchPath: string | undefined) => string | undefined;
  env: NodeJS.ProcessEnv;
  host: () => HostFacts;
}

/** Output kept from a probed process: a version line or a GPU table is far smaller. */
export const EXEC_MAX_OUTPUT_BYTES = 64 * 1024;

export const execBounded: ExecFunction = (file, args, options) =>
  new Promise((resolve) => {
    execFile(
      file,
      [...args],
      {
        timeout: options.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: EXEC_MAX_OUTPUT_BYTES,
        env: options.env,
        signal: options.signal,
        windowsHide: true,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        const failure = error as (NodeJS.ErrnoException & { killed?: boolean; code?: unknown }) | null;
        resolve({
          stdout: String(stdout ?? ''),
          stderr: String(stderr ?? ''),
          code: failure ? (typeof failure.code === 'number' ? failure.code : null) : 0,
          timedOut: failure?.killed === true,
        });
      },
    );
  });

export function systemProbeDeps(env: NodeJS.ProcessEnv, fetchFunction: typeof fetch = fetch): ProbeDeps {
  return {
    fetch: fetchFunction,
    exec: execBounded,
    which: findExecutable,
    env,
    host: () => ({
      platform: process.platform,
      arch: process.arch,
      cpuCores: os.availableParallelism?.() ?? os.cpus().length,
      memoryBytes: os.totalmem(),
    }),
  };
}
