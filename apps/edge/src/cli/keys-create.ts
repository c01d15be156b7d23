// `iop-edge keys create <id> [--models a,b] [--rpm N] [--tpm N] [--max-concurrent N] [--budget N/day|N/month]
// [--weight N] [--priority interactive|batch] [--json] [--config P]`: makes a new API key, appends `{ id, key_sha256, limits }` to openai.api_keys of edge.yaml
// (the YAML document is edited in place, so comments and layout elsewhere stay) and prints the key once: the file
// keeps only its SHA-256. The result is validated as a whole before anything is written, and written atomically.
// A running edge applies it with `iop-edge config refresh --mode apply` (key changes are live).
import { randomBytes, createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  appendApiKey,
  IDENTIFIER_PATTERN,
  isConfigError,
  parseConfigText,
  type ApiKeyEntry,
} from '@iop/config';
import { booleanFlag, parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { configFlag, printConfigIssues, resolveCommandConfigPath } from './config-source.js';

const KEY_PREFIX = 'sk-iop-';

export interface KeysCreateDeps {
  /** Source of the key's random bytes (tests). */
  randomBytes?: (size: number) => Buffer;
}

export function createKeysCreateCommand(deps: KeysCreateDeps = {}): CliCommand {
  const random = deps.randomBytes ?? randomBytes;
  return {
    path: ['keys', 'create'],
    summary: 'Create an API key (a principal with optional limits); prints the key once, stores its SHA-256.',
    usage:
      'keys create <id> [--models a,b] [--rpm N] [--tpm N] [--max-concurrent N] [--budget N/day|N/month] [--weight N] [--priority interactive|batch] [--json] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        ...configFlag,
        json: { type: 'boolean' },
        models: { type: 'string' },
        rpm: { type: 'string' },
        tpm: { type: 'string' },
        'max-concurrent': { type: 'string' },
        budget: { type: 'string' },
        weight: { type: 'string' },
        priority: { type: 'string' },
      });
      const [id, ...extra] = flags.positionals;
      if (!id) throw new UsageError('a key id is required');
      if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
      if (!new RegExp(IDENTIFIER_PATTERN).test(id)) {
        throw new UsageError(`invalid key id '${id}': use 1-64 letters, digits, '.', '_' or '-'`);
      }
      const key = `${KEY_PREFIX}${random(32).toString('base64url')}`;
      const entry: { -readonly [K in keyof ApiKeyEntry]: ApiKeyEntry[K] } = {
        id,
        key_sha256: createHash('sha256').update(key).digest('hex'),
      };
      const models = stringFlag(flags, 'models');
      if (models !== undefined) {
        const list = models
          .split(',')
          .map((model) => model.trim())
          .filter((model) => model !== '');
        if (list.length === 0) throw new UsageError('--models needs at least one model id');
        entry.models = list;
      }
      for (const [flag, field] of [
        ['rpm', 'rpm'],
        ['tpm', 'tpm'],
        ['max-concurrent', 'max_concurrent'],
      ] as const) {
        const value = stringFlag(flags, flag);
        if (value !== undefined) entry[field] = positiveInteger(value, `--${flag}`);
      }
      const budget = stringFlag(flags, 'budget');
      if (budget !== undefined) {
        const match = /^(\d+)\/(day|month)$/.exec(budget);
        if (!match) throw new UsageError(`invalid --budget '${budget}': expected N/day or N/month`);
        entry.token_budget = {
          tokens: positiveInteger(match[1] ?? '', '--budget'),
          per: match[2] === 'month' ? 'month' : 'day',
        };
      }

      // The key's fair share of a model's queue; bounds are checked with the whole config below.
      const weight = stringFlag(flags, 'weight');
      if (weight !== undefined) entry.weight = positiveInteger(weight, '--weight');
      const priority = stringFlag(flags, 'priority');
      if (priority !== undefined) {
        if (priority !== 'interactive' && priority !== 'batch') {
          throw new UsageError(`invalid --priority '${priority}': expected interactive or batch`);
        }
        entry.priority = priority;
      }

      const { path: configPath } = resolveCommandConfigPath(stringFlag(flags, 'config'), io);
      const text = await fs.readFile(configPath, 'utf8');
      let next: string;
      try {
        next = appendApiKey(text, entry);
      } catch (error) {
        if (isConfigError(error)) {
          writeLine(io.stderr, `${configPath}: ${error.message}`);
          return 1;
        }
        throw error;
      }
      const checked = parseConfigText(next, configPath, { baseDir: path.dirname(configPath) });
      if (!checked.ok) {
        if (checked.issues.some((issue) => issue.message.includes(`duplicate key id '${id}'`))) {
          writeLine(io.stderr, `a key with id '${id}' already exists in ${configPath}`);
          return 1;
        }
        writeLine(io.stderr, `not written: ${configPath} would be invalid with the new key:`);
        printConfigIssues(io, configPath, checked.issues);
        return 1;
      }
      await writeAtomically(configPath, next);

      if (booleanFlag(flags, 'json')) {
        writeLine(io.stdout, JSON.stringify({ id, key, key_sha256: entry.key_sha256, config: configPath }));
        return 0;
      }
      writeLine(io.stdout, `Created key ${id} in ${configPath}.`);
      writeLine(io.stdout, `Key (shown only now; edge.yaml keeps only its SHA-256): ${key}`);
      writeLine(io.stdout, 'A running edge applies it with: iop-edge config refresh --mode apply');
      return 0;
    },
  };
}

function positiveInteger(text: string, flag: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`invalid ${flag} '${text}': expected a positive integer`);
  }
  return value;
}

/** Same directory, same mode, then rename: a reader sees the old file or the new one, never a partial one. */
export async function writeAtomically(file: string, text: string): Promise<void> {
  const stat = await fs.stat(file);
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    await fs.writeFile(temporary, text, { mode: stat.mode & 0o777 });
    await fs.rename(temporary, file);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
}

export const keysCreateCommand = createKeysCreateCommand();
