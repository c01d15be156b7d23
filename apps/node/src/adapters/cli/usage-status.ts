// The `status` node command: usage / rate-limit information of claude, claude-tui, codex and antigravity
// targets, parsed into readable fields (window, used_percent, resets_at), or the raw CLI output with a
// `parse_status` note when it cannot be parsed. Sources, best first:
//   claude, claude-tui: `rate_limit_event` lines seen in stream-json output; else what `claude -p /usage` prints
//   codex:              `rate_limits` in the newest rollout file under $CODEX_HOME/sessions
//   antigravity:        what `agy --print /usage` prints
import { systemClock, type ClockTimer } from '@iop/clock';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedProfile } from './cli-profile.js';
import { stripAnsi } from './ansi.js';
import {
  isObject,
  numberField,
  objectField,
  parseJsonLine,
  stringField,
  type JsonObject,
} from './output/json-line.js';
import type { ProcessLauncher } from './process-launcher.js';
import type { ProcessTreeControl } from './process-tree.js';

export type StatusKind = 'claude' | 'codex' | 'antigravity';

export function statusKindOf(target: string, profile: ResolvedProfile): StatusKind | undefined {
  if (target === 'claude' || target === 'claude-tui') return 'claude';
  if (target === 'codex') return 'codex';
  if (target === 'antigravity') return 'antigravity';
  switch (profile.outputFormat) {
    case 'claude-stream-json':
      return 'claude';
    case 'codex-json':
      return 'codex';
    case 'antigravity-print':
      return 'antigravity';
    case 'cline-json':
    case 'opencode-json':
    case 'text':
      return undefined;
    default: {
      const unreachable: never = profile.outputFormat;
      return unreachable;
    }
  }
}

/** Fields of a claude `rate_limit_info` object. */
export function claudeRateLimitFields(info: Record<string, unknown>): Record<string, string> {
  const fields: Record<string, string> = { source: 'rate_limit_event' };
  const window = stringField(info, 'rateLimitType');
  if (window) fields.window = window;
  const status = stringField(info, 'status');
  if (status) fields.status = status;
  const resetsAt = numberField(info, 'resetsAt');
  if (resetsAt !== undefined) fields.resets_at = unixToIso(resetsAt);
  const utilization = numberField(info, 'utilization') ?? numberField(info, 'usedPercent');
  if (utilization !== undefined)
    fields.used_percent = formatPercent(
      utilization <= 1 && utilization > 0 ? utilization * 100 : utilization,
    );
  if (info.isUsingOverage === true) fields.overage = 'true';
  return fields;
}

/** The last `rate_limits` object in the newest codex rollout file, as fields; undefined when none exists. */
export function readCodexRateLimits(codexHome: string): Record<string, string> | undefined {
  const files = listRolloutFiles(path.join(codexHome, 'sessions'));
  files.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const file of files) {
    let latest: JsonObject | undefined;
    for (const line of readFileSync(file.path, 'utf8').split('\n')) {
      const found = findRateLimits(parseJsonLine(line));
      if (found) latest = found;
    }
    if (latest) {
      const fields: Record<string, string> = { source: path.basename(file.path) };
      for (const name of ['primary', 'secondary']) {
        const window = objectField(latest, name);
        if (!window) continue;
        const minutes = numberField(window, 'window_minutes');
        if (minutes !== undefined) fields[`${name}.window`] = describeMinutes(minutes);
        const used = numberField(window, 'used_percent');
        if (used !== undefined) fields[`${name}.used_percent`] = formatPercent(used);
        const resetsAt = numberField(window, 'resets_at');
        const resetsIn = numberField(window, 'resets_in_seconds');
        if (resetsAt !== undefined) fields[`${name}.resets_at`] = unixToIso(resetsAt);
        else if (resetsIn !== undefined)
          fields[`${name}.resets_at`] = new Date(file.mtimeMs + resetsIn * 1000).toISOString();
      }
      return fields;
    }
  }
  return undefined;
}

function findRateLimits(value: unknown): JsonObject | undefined {
  if (!isObject(value)) return undefined;
  const direct = objectField(value, 'rate_limits');
  if (direct && (objectField(direct, 'primary') || objectField(direct, 'secondary'))) return direct;
  for (const nested of Object.values(value)) {
    const found = findRateLimits(nested);
    if (found) return found;
  }
  return undefined;
}

function listRolloutFiles(directory: string): Array<{ path: string; mtimeMs: number }> {
  const found: Array<{ path: string; mtimeMs: number }> = [];
  const walk = (current: string, depth: number) => {
    if (depth > 4) return;
    let entries: string[];
    try {
      entries = readdirSync(current);
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(current, entry);
      try {
        const stat = statSync(full);
        if (stat.isDirectory()) walk(full, depth + 1);
        else if (/^rollout-.*\.jsonl$/.test(entry)) found.push({ path: full, mtimeMs: stat.mtimeMs });
      } catch {
        // Vanished while listing.
      }
    }
  };
  walk(directory, 0);
  return found;
}

/**
 * Reads usage figures from CLI text such as "Current session: 42% used · Resets 5pm" or "5-hour limit: 12%
 * used, resets at 18:00". Returns undefined when no percentage is found.
 */
export function parseUsageText(raw: string): Record<string, string> | undefined {
  const fields: Record<string, string> = {};
  let index = 0;
  for (const line of raw.split(/\r?\n/).map(stripAnsi)) {
    const percent = /(\d+(?:\.\d+)?)\s*%\s*(used|left|remaining)?/i.exec(line);
    if (!percent?.[1]) continue;
    const value = Number(percent[1]);
    const used = /left|remaining/i.test(percent[2] ?? '') ? 100 - value : value;
    const label = line
      .slice(0, percent.index)
      .replace(/[:\-–·|█░▌▏\s]+$/u, '')
      .trim();
    const prefix = `limit.${index}`;
    fields[`${prefix}.window`] = label || 'usage';
    fields[`${prefix}.used_percent`] = formatPercent(used);
    const reset = /resets?\s*(?:at|in|on)?\s*([^·|,;]+)$/i.exec(line.slice(percent.index));
    if (reset?.[1]) fields[`${prefix}.resets_at`] = reset[1].trim();
    index += 1;
  }
  return index > 0 ? fields : undefined;
}

export interface StatusCommandDeps {
  launcher: ProcessLauncher;
  tree: ProcessTreeControl;
  killGraceMs: number;
}

/** Runs the CLI's own usage command and returns everything it printed (stdout and stderr). */
export async function runStatusCommand(
  deps: StatusCommandDeps,
  profile: ResolvedProfile,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ output: string; timedOut: boolean }> {
  const launched = deps.launcher.launch({
    command: profile.command,
    args,
    cwd,
    env,
    terminal: profile.terminal,
    stdin: 'ignore',
  });
  let output = '';
  launched.onOutput((chunk) => {
    output = (output + chunk).slice(-20_000);
  });
  let timer: ClockTimer | undefined;
  const timedOut = await Promise.race([
    launched.exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = systemClock.setTimeout(() => resolve(true), timeoutMs, { keepAlive: true });
    }),
  ]);
  if (timer) systemClock.clearTimeout(timer);
  if (timedOut && launched.pid !== undefined) await deps.tree.terminate(launched.pid, deps.killGraceMs);
  const exit = await launched.exited;
  if (exit.spawnError) output += `\n${exit.spawnError}`;
  return { output: output.split(/\r?\n/).map(stripAnsi).join('\n').trim(), timedOut };
}

function unixToIso(value: number): string {
  // Seconds or milliseconds since the epoch.
  const ms = value > 1e12 ? value : value * 1000;
  return new Date(ms).toISOString();
}

function formatPercent(value: number): string {
  return `${Math.round(value * 10) / 10}`;
}

function describeMinutes(minutes: number): string {
  if (minutes % 1440 === 0) return `${minutes / 1440}d`;
  if (minutes % 60 === 0) return `${minutes / 60}h`;
  return `${minutes}m`;
}
