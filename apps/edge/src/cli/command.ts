// A CLI command: one file per command under cli/, registered in cli/commands.ts.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Path of the running executable (SEA binary or bin/ launcher), for executable-adjacent lookups. */
  execPath: string;
}

export interface CliCommand {
  /** Words that select the command, e.g. ['config', 'check']. */
  path: string[];
  summary: string;
  usage: string;
  /** Returns the process exit code. Commands never call process.exit themselves. */
  run(argv: string[], io: CliIo): Promise<number>;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ParsedFlags {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/** parseArgs with strict checking; unknown flags become a UsageError. */
export function parseFlags(argv: string[], options: NonNullable<ParseArgsConfig['options']>): ParsedFlags {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** A string flag's value, or undefined. */
export function stringFlag(flags: ParsedFlags, name: string): string | undefined {
  const value = flags.values[name];
  return typeof value === 'string' ? value : undefined;
}

export function booleanFlag(flags: ParsedFlags, name: string): boolean {
  return flags.values[name] === true;
}

export function writeLine(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`);
}
