// `iop-edge usage [--by key|model|node|provider|surface] [--since 24h] [--json] [--addr host:port] [--config P]`:
// the token and run totals a running edge recorded (admin API GetUsage, read from its usage store), largest
// token use first. `--since` takes a duration (30m, 24h, 7d) or `all`; anonymous runs show as `(anonymous)`.
import { systemClock } from '../clock.js';
import type { UsageGroup } from '@iop/wire';
import { createAdminClient, type AdminClient, type AdminClientOptions } from '../admin/admin-client.js';
import { isAdminError } from '../admin/errors.js';
import {
  booleanFlag,
  parseFlags,
  stringFlag,
  UsageError,
  writeLine,
  writeTable,
  type CliCommand,
  type CliIo,
} from './command.js';
import { configFlag } from './config-source.js';
import { ADMIN_TOKEN_ENV, adminTarget } from './nodes-list.js';

const GROUPS = ['key', 'model', 'node', 'provider', 'surface'] as const;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export interface UsageCommandDeps {
  createClient: (options: AdminClientOptions) => AdminClient;
  now: () => number;
}

export function createUsageCommand(
  deps: UsageCommandDeps = {
    createClient: (options) => createAdminClient(options, systemClock),
    now: () => systemClock.now(),
  },
): CliCommand {
  return {
    path: ['usage'],
    summary: `Token and run totals recorded by a running edge, by key, model, node, provider or surface (admin API; token from config or ${ADMIN_TOKEN_ENV}).`,
    usage:
      'usage [--by key|model|node|provider|surface] [--since 24h|all] [--json] [--addr host:port] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        ...configFlag,
        json: { type: 'boolean' },
        addr: { type: 'string' },
        by: { type: 'string' },
        since: { type: 'string' },
      });
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const by = stringFlag(flags, 'by') ?? 'key';
      if (!(GROUPS as readonly string[]).includes(by)) {
        throw new UsageError(`invalid --by '${by}': expected one of ${GROUPS.join(', ')}`);
      }
      const since = stringFlag(flags, 'since') ?? '24h';
      const sinceUnixMs = since === 'all' ? 0 : Math.max(0, deps.now() - durationMs(since));
      const target = await adminTarget(stringFlag(flags, 'addr'), stringFlag(flags, 'config'), io);
      if (!target) return 1;
      const client = deps.createClient(target);
      try {
        const groups = await client.getUsage({ by, sinceUnixMs });
        if (booleanFlag(flags, 'json')) {
          writeLine(
            io.stdout,
            JSON.stringify({ by, since_unix_ms: sinceUnixMs, groups: groups.map(toJson) }, null, 2),
          );
        } else printTable(io, by, groups);
        return 0;
      } catch (error) {
        if (!isAdminError(error)) throw error;
        writeLine(io.stderr, `iop-edge usage: ${error.message}`);
        return 1;
      } finally {
        client.close();
      }
    },
  };
}

export const usageCommand = createUsageCommand();

function durationMs(text: string): number {
  const match = /^(\d+)([smhd])$/.exec(text);
  const unit = match ? UNIT_MS[match[2] ?? ''] : undefined;
  if (!match || unit === undefined || Number(match[1]) <= 0) {
    throw new UsageError(`invalid --since '${text}': expected a duration such as 30m, 24h or 7d, or 'all'`);
  }
  return Number(match[1]) * unit;
}

function toJson(group: UsageGroup): Record<string, unknown> {
  return {
    group: group.group,
    runs: group.runs,
    input_tokens: group.inputTokens,
    output_tokens: group.outputTokens,
    total_tokens: group.inputTokens + group.outputTokens,
    completed: group.completed,
    errors: group.errors,
    cancelled: group.cancelled,
    rejected: group.rejected,
    queue_ms_total: round(group.queueMsTotal),
    duration_ms_total: round(group.durationMsTotal),
  };
}

function printTable(io: CliIo, by: string, groups: UsageGroup[]): void {
  if (groups.length === 0) {
    writeLine(io.stdout, 'no usage recorded in that period');
    return;
  }
  const header = [by.toUpperCase(), 'RUNS', 'IN', 'OUT', 'TOTAL', 'OK', 'ERR', 'CANCEL', 'REJECT', 'AVG MS'];
  const rows = groups.map((group) => [
    group.group === '' ? '(anonymous)' : group.group,
    String(group.runs),
    String(group.inputTokens),
    String(group.outputTokens),
    String(group.inputTokens + group.outputTokens),
    String(group.completed),
    String(group.errors),
    String(group.cancelled),
    String(group.rejected),
    group.runs > 0 ? round(group.durationMsTotal / group.runs).toFixed(0) : '0',
  ]);
  writeTable(io.stdout, header, rows);
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
