// Child processes of the benchmark: start one, wait for a line on its stdout that announces readiness, read its
// resident memory, and stop every process on the way out (also when the run fails half way).
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import path from 'node:path';

const running = new Set();

/**
 * Starts `node <script> ...args` and resolves once a stdout line matches `ready` (with the match), or rejects
 * when the process exits first or `timeoutMs` passes.
 * Without `ready` it resolves at once.
 * `openFiles` raises the child's soft open-files limit to that many (through `sh -c 'ulimit -S -n'`, which `exec`s
 * node, so the pid is node's); the hard limit must allow it.
 * @param {{ name: string, script: string, args?: string[], env?: Record<string,string>, ready?: RegExp,
 *   timeoutMs?: number, nodeOptions?: string[], cwd?: string, openFiles?: number }} options
 */
export function startProcess(options) {
  const argv = [...(options.nodeOptions ?? []), options.script, ...(options.args ?? [])];
  const raise = options.openFiles !== undefined && openFilesLimit().soft < options.openFiles;
  const child = spawn(
    raise ? '/bin/sh' : process.execPath,
    raise
      ? ['-c', `ulimit -S -n ${Number(options.openFiles)} && exec "$0" "$@"`, process.execPath, ...argv]
      : argv,
    {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  // IOP_BENCH_LOG_DIR: every child's stdout and stderr are also written to <dir>/<name>-<pid>.log (e.g. to read
  // a --trace-gc or --trace-deopt run afterwards).
  const logFile = process.env.IOP_BENCH_LOG_DIR
    ? createWriteStream(path.join(process.env.IOP_BENCH_LOG_DIR, `${options.name}-${child.pid}.log`))
    : undefined;
  if (logFile) child.once('exit', () => logFile.end());
  const keep = (chunk) => {
    logFile?.write(chunk);
    output += chunk.toString();
    // Keep only the tail: long runs must not grow the benchmark's own memory.
    if (output.length > 64_000) output = output.slice(-32_000);
  };
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const handle = {
    name: options.name,
    pid: child.pid,
    child,
    output: () => output,
    exited,
    /** Resident set size in MB (Linux /proc). */
    rssMb: () => rssMb(child.pid),
    /** CPU time used so far (user + system), in ms. */
    cpuMs: () => cpuMs(child.pid),
    async stop() {
      running.delete(handle);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(handle);
  if (!options.ready) {
    child.stdout.on('data', keep);
    return Promise.resolve(handle);
  }
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      reject(new Error(`${options.name} did not become ready in time; output:\n${output}`));
    }, options.timeoutMs ?? 20_000);
    child.stdout.on('data', (chunk) => {
      keep(chunk);
      buffer += chunk.toString();
      const match = options.ready.exec(buffer);
      if (match) {
        clearTimeout(timer);
        buffer = '';
        resolve({ ...handle, match });
      } else if (buffer.length > 64_000) buffer = buffer.slice(-4096);
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`${options.name} exited (code ${code}, signal ${signal}) before ready; output:\n${output}`),
      );
    });
  });
}

/** Stops every process started here (reverse start order). */
export async function stopAll() {
  for (const handle of [...running].reverse()) await handle.stop();
}

export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) / 1024;
}

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU ms each process spent while `work` runs: `processes` maps a role to a pid (or to a handle with `pid`).
 * Resolves with `{ result, spent }`, `spent` by role.
 */
export async function cpuDuring(processes, work) {
  const pidOf = (entry) => (typeof entry === 'number' ? entry : entry.pid);
  const entries = Object.entries(processes);
  const before = Object.fromEntries(entries.map(([role, entry]) => [role, cpuMs(pidOf(entry))]));
  const result = await work();
  const spent = Object.fromEntries(
    entries.map(([role, entry]) => [role, cpuMs(pidOf(entry)) - before[role]]),
  );
  return { result, spent };
}

/** This process's open-files limit (soft and hard; `Infinity` for unlimited), from /proc/self/limits. */
export function openFilesLimit() {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((text) => text.startsWith('Max open files'));
  const [soft, hard] = (line ?? '').split(/\s{2,}/).slice(1, 3);
  const parse = (text) => (text === 'unlimited' ? Infinity : Number(text));
  return { soft: parse(soft), hard: parse(hard) };
}

/** Waits until `check()` is true, polling every `intervalMs`, failing after `timeoutMs`. */
export async function waitUntil(check, timeoutMs, what, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
