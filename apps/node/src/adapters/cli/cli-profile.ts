// Turns a wire CliProfile (pure data from the edge config) into the resolved settings a run needs: which
// session kind serves it, its output format, its timers with defaults, and the command path. A profile is data
// only, so adding a headless CLI whose output is plain text or a supported JSON format needs no code.
import path from 'node:path';
import type { CliProfile } from '@iop/wire';
import { CliAdapterError } from './errors.js';

export const OUTPUT_FORMATS = [
  'text',
  'claude-stream-json',
  'codex-json',
  'cline-json',
  'opencode-json',
  'antigravity-print',
] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** persistent: one long-lived process per session; oneshot: one process per run; opencode-sse: serve + HTTP. */
export type SessionKind = 'persistent' | 'oneshot' | 'opencode-sse';

export interface ResolvedProfile {
  name: string;
  kind: SessionKind;
  /** Absolute when the configured command contained a slash; else a name looked up on PATH. */
  command: string;
  args: string[];
  resumeArgs: string[];
  env: Record<string, string>;
  terminal: boolean;
  outputFormat: OutputFormat;
  idleTimeoutMs: number;
  requestTimeoutMs: number;
  resultGraceMs: number;
}

export const PROFILE_DEFAULTS = {
  idleTimeoutMs: 3000,
  requestTimeoutMs: 30 * 60 * 1000,
  resultGraceMs: 3000,
} as const;

/**
 * Resolves `profile` named `name`. `agentCwd` is the node agent's working directory: a relative command with a
 * slash (`bin/iop-fake-cli`) resolves against it, so a repo-relative profile works when the node runs there.
 */
export function resolveProfile(name: string, profile: CliProfile, agentCwd: string): ResolvedProfile {
  if (!profile.command.trim()) throw new CliAdapterError('invalid_profile', `profile ${name} has no command`);
  const mode = profile.mode.trim();
  let kind: SessionKind;
  let outputFormat: OutputFormat;
  switch (mode) {
    case 'persistent':
    case 'persistent-lazy':
      kind = 'persistent';
      outputFormat = 'text';
      break;
    case 'opencode-sse':
      kind = 'opencode-sse';
      outputFormat = 'text';
      break;
    case 'antigravity-print':
      kind = 'oneshot';
      outputFormat = 'antigravity-print';
      break;
    case '':
    case 'oneshot':
    case 'one-shot':
      kind = profile.persistent ? 'persistent' : 'oneshot';
      outputFormat = kind === 'persistent' ? 'text' : parseOutputFormat(name, profile.outputFormat);
      break;
    default:
      throw new CliAdapterError(
        'invalid_profile',
        `profile ${name} has unknown mode "${mode}" (persistent, persistent-lazy, oneshot, antigravity-print, opencode-sse)`,
      );
  }
  const command = profile.command.includes('/') ? path.resolve(agentCwd, profile.command) : profile.command;
  return {
    name,
    kind,
    command,
    args: [...profile.args],
    resumeArgs: [...profile.resumeArgs],
    env: { ...profile.env },
    terminal: profile.terminal,
    outputFormat,
    idleTimeoutMs: profile.idleTimeoutMs || PROFILE_DEFAULTS.idleTimeoutMs,
    requestTimeoutMs: profile.requestTimeoutMs || PROFILE_DEFAULTS.requestTimeoutMs,
    resultGraceMs: profile.resultGraceMs || PROFILE_DEFAULTS.resultGraceMs,
  };
}

function parseOutputFormat(name: string, value: string): OutputFormat {
  const format = value.trim() || 'text';
  if ((OUTPUT_FORMATS as readonly string[]).includes(format)) return format as OutputFormat;
  throw new CliAdapterError(
    'invalid_profile',
    `profile ${name} has unknown output_format "${format}" (${OUTPUT_FORMATS.join(', ')})`,
  );
}
