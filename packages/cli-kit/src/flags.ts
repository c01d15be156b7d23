// Flag parsing for CLI commands: node:util parseArgs in strict mode, with typed accessors whose bad input is a
// UsageError (never a crash or a silently ignored value).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './cli-command.js';

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
