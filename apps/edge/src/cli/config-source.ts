// Shared by every edge command that takes --config: resolves which edge.yaml to use (flag, IOP_EDGE_CONFIG,
// ./edge.yaml, executable-adjacent, repo configs/edge.yaml) and loads it, and prints load issues uniformly.
import {
  formatIssue,
  isConfigError,
  loadConfigFile,
  resolveConfigPath,
  type ConfigIssue,
  type ConfigLoadResult,
  type EdgeConfig,
  type ResolvedConfigPath,
} from '@iop/config';
import { UsageError, writeLine, type CliIo } from './command.js';

/** The parseArgs option every config-reading command declares. */
export const configFlag = { config: { type: 'string', short: 'c' } } as const;

export interface LoadedConfigSource extends ResolvedConfigPath {
  readonly result: ConfigLoadResult;
}

export function resolveCommandConfigPath(explicit: string | undefined, io: CliIo): ResolvedConfigPath {
  try {
    return resolveConfigPath({ explicit, cwd: io.cwd, execPath: io.execPath, env: io.env });
  } catch (error) {
    if (isConfigError(error)) throw new UsageError(error.message);
    throw error;
  }
}

export async function loadCommandConfig(
  explicit: string | undefined,
  io: CliIo,
): Promise<LoadedConfigSource> {
  const resolved = resolveCommandConfigPath(explicit, io);
  return { ...resolved, result: await loadConfigFile(resolved.path) };
}

export interface ValidConfigSource extends ResolvedConfigPath {
  readonly config: EdgeConfig;
}

/**
 * Loads the command's edge.yaml. When it has problems they are listed on stderr and the result is undefined:
 * the command then exits 1.
 */
export async function loadValidConfig(
  explicit: string | undefined,
  io: CliIo,
): Promise<ValidConfigSource | undefined> {
  const { result, ...resolved } = await loadCommandConfig(explicit, io);
  if (!result.ok) {
    printConfigIssues(io, resolved.path, result.issues);
    return undefined;
  }
  return { ...resolved, config: result.config };
}

/** Lists every issue on stderr, then a count line naming the file. */
export function printConfigIssues(io: CliIo, path: string, issues: readonly ConfigIssue[]): void {
  for (const issue of issues) writeLine(io.stderr, formatIssue(issue));
  writeLine(io.stderr, `${path}: ${issues.length} problem${issues.length === 1 ? '' : 's'}`);
}
