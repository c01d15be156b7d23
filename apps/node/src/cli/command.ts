// The node agent's CLI command shape (the same small framework as iop-edge's): one file per command, registered
// in commands.ts; commands return an exit code and never call process.exit.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Subscribes to SIGINT/SIGTERM; returns the unsubscribe function. Injected so tests can signal in-process. */
export type SignalSource = (handler: (signal: NodeJS.Signals) => void) => () => void;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  onSignal: SignalSource;
}

export interface CliCommand {
  path: string[];
  summary: string;
  usage: string;
  run(argv: string[], io: CliIo): Promise<number>;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ParsedFlags {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

export function parseFlags(argv: string[], options: NonNullable<ParseArgsConfig['options']>): ParsedFlags {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function stringFlag(flags: ParsedFlags, name: string): string | undefined {
  const value = flags.values[name];
  return typeof value === 'string' ? value : undefined;
}

export function booleanFlag(flags: ParsedFlags, name: string): boolean {
  return flags.values[name] === true;
}

/** A non-negative integer flag (`min` inclusive), or `fallback` when absent; bad values are a UsageError. */
export function integerFlag(flags: ParsedFlags, name: string, fallback: number, min = 0): number {
  const raw = stringFlag(flags, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`--${name} must be an integer ≥ ${min}, got '${raw}'`);
  }
  return value;
}

export function writeLine(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`);
}
