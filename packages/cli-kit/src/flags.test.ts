import { PassThrough } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { UsageError, writeLine } from './cli-command.js';
import { booleanFlag, integerFlag, parseFlags, stringFlag } from './flags.js';

const options = {
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  limit: { type: 'string' },
} as const;

describe('parseFlags', () => {
  it('reads string and boolean flags and keeps positionals', () => {
    const flags = parseFlags(['extra', '-c', 'edge.yaml', '--json'], options);
    expect(stringFlag(flags, 'config')).toBe('edge.yaml');
    expect(booleanFlag(flags, 'json')).toBe(true);
    expect(stringFlag(flags, 'limit')).toBeUndefined();
    expect(flags.positionals).toEqual(['extra']);
  });

  it('turns an unknown flag into a UsageError naming it', () => {
    expect(() => parseFlags(['--verbose'], options)).toThrow(UsageError);
    expect(() => parseFlags(['--verbose'], options)).toThrow(/--verbose/);
  });

  it('turns a string flag without its value into a UsageError', () => {
    expect(() => parseFlags(['--config'], options)).toThrow(UsageError);
  });

  it('reports an absent boolean flag as false and a string flag read as boolean as false', () => {
    const flags = parseFlags(['--config', 'x'], options);
    expect(booleanFlag(flags, 'json')).toBe(false);
    expect(booleanFlag(flags, 'config')).toBe(false);
  });
});

describe('integerFlag', () => {
  it('returns the fallback when absent and the value when given', () => {
    expect(integerFlag(parseFlags([], options), 'limit', 20)).toBe(20);
    expect(integerFlag(parseFlags(['--limit', '7'], options), 'limit', 20)).toBe(7);
    expect(integerFlag(parseFlags(['--limit', '0'], options), 'limit', 20)).toBe(0);
  });

  it.each(['-1', '1.5', 'ten', '', '99999999999999999999'])('rejects %p as a UsageError', (raw) => {
    const flags = parseFlags([`--limit=${raw}`], options);
    expect(() => integerFlag(flags, 'limit', 20)).toThrow(UsageError);
  });

  it('enforces the inclusive minimum in its message', () => {
    const flags = parseFlags(['--limit', '0'], options);
    expect(() => integerFlag(flags, 'limit', 20, 1)).toThrow("--limit must be an integer ≥ 1, got '0'");
    expect(integerFlag(parseFlags(['--limit', '1'], options), 'limit', 20, 1)).toBe(1);
  });
});

describe('writeLine', () => {
  it('writes the line with a newline, and a bare newline by default', () => {
    const stream = new PassThrough();
    writeLine(stream, 'hello');
    writeLine(stream);
    expect(String(stream.read())).toBe('hello\n\n');
  });
});
