// The measured health of a CLI adapter's profiles. A profile is healthy when its command resolves to an executable
// on the PATH its runs get and `<command> --version` exits 0 within the time allowed; otherwise it is unhealthy
// with the cause: `command_not_found` (nothing to run) or `command_failed` (it exited non-zero, could not start, or
// did not answer in time). `--version` runs again only when the executable changed (another path, another mtime)
// or its last answer is older than recheckMs, so the health monitor's probe every few seconds costs one stat per
// profile.
import { statSync } from 'node:fs';
import type { TargetHealth } from '../health-probe-result.js';
import { findExecutable } from './command-lookup.js';
import type { ProcessLauncher } from './process-launcher.js';
import type { ProcessTreeControl } from './process-tree.js';

/** What the probe needs to know of a profile: its command and the environment and directory its runs get. */
export interface ProbedProfile {
  name: string;
  command: string;
  env: Record<string, string>;
  cwd: string;
}

export interface ProfileHealthDeps {
  launcher: ProcessLauncher;
  tree: ProcessTreeControl;
  killGraceMs: number;
  /** Monotonic milliseconds (the adapter's `now`). */
  now: () => number;
  /** Time `--version` may take (default 5 s). */
  versionTimeoutMs?: number;
  /** How long a passing or failing `--version` is trusted for an unchanged executable (default 10 min). */
  recheckMs?: number;
}

interface CachedCheck {
  /** Resolved path and mtime of the executable the check ran. */
  key: string;
  at: number;
  result: TargetHealth;
}

export class ProfileHealth {
  readonly #deps: ProfileHealthDeps;
  readonly #checks = new Map<string, CachedCheck>();

  constructor(deps: ProfileHealthDeps) {
    this.#deps = deps;
  }

  /** The health of each profile, by name. */
  async probe(
    profiles: readonly ProbedProfile[],
    signal: AbortSignal,
  ): Promise<Record<string, TargetHealth>> {
    const entries = await Promise.all(
      profiles.map(async (profile) => [profile.name, await this.#probeOne(profile, signal)] as const),
    );
    const live = new Set(profiles.map((profile) => profile.name));
    for (const name of this.#checks.keys()) if (!live.has(name)) this.#checks.delete(name);
    return Object.fromEntries(entries);
  }

  async #probeOne(profile: ProbedProfile, signal: AbortSignal): Promise<TargetHealth> {
    const resolved = findExecutable(profile.command, profile.env['PATH']);
    if (resolved === undefined) {
      this.#checks.delete(profile.name);
      return {
        health: 'unhealthy',
        cause: 'command_not_found',
        detail: `profile ${profile.name}: command ${profile.command} was not found${
          profile.command.includes('/') ? '' : ' on its PATH'
        }`,
      };
    }
    const key = `${resolved}\0${mtimeOf(resolved)}`;
    const now = this.#deps.now();
    const cached = this.#checks.get(profile.name);
    if (cached && cached.key === key && now - cached.at < (this.#deps.recheckMs ?? 600_000))
      return cached.result;
    const result = await this.#version(profile, resolved, signal);
    if (!signal.aborted) this.#checks.set(profile.name, { key, at: now, result });
    return result;
  }

  async #version(profile: ProbedProfile, resolved: string, signal: AbortSignal): Promise<TargetHealth> {
    const timeoutMs = this.#deps.versionTimeoutMs ?? 5_000;
    const launched = this.#deps.launcher.launch({
      command: resolved,
      args: ['--version'],
      cwd: profile.cwd,
      env: profile.env,
      terminal: false,
      stdin: 'ignore',
    });
    let output = '';
    launched.onOutput((chunk) => {
      output = (output + chunk).slice(-2_000);
    });
    const stop = () => {
      if (launched.pid !== undefined) void this.#deps.tree.terminate(launched.pid, this.#deps.killGraceMs);
    };
    // The probe's own timeout (the health monitor aborts the signal) or ours, whichever comes first.
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    deadline.addEventListener('abort', stop, { once: true });
    try {
      const exit = await launched.exited;
      const firstLine = output.trim().split(/\r?\n/)[0] ?? '';
      if (exit.exitCode === 0)
        return { health: 'healthy', detail: `${profile.name}: ${firstLine || resolved}` };
      const why = deadline.aborted
        ? `did not answer within ${timeoutMs} ms`
        : exit.spawnError
          ? `could not start: ${exit.spawnError}`
          : `exited ${exit.exitCode ?? exit.signal ?? 'abnormally'}`;
      return {
        health: 'unhealthy',
        cause: 'command_failed',
        detail: `profile ${profile.name}: ${resolved} --version ${why}${firstLine ? ` (${firstLine})` : ''}`,
      };
    } finally {
      deadline.removeEventListener('abort', stop);
    }
  }
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
