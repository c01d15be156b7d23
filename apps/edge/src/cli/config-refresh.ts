// `iop-edge config refresh --mode dry-run|apply [--addr host:port] [--json] [--config P]`: sends the candidate
// edge.yaml (the --config path, resolved like every other command) to a running edge's admin API and prints what
// the edge made of it. The file is sent as text even when it does not validate here: the edge reports every
// problem with its path. The admin address is --addr, else the candidate's `refresh.listen`, else the default
// 127.0.0.1:19093; the token is IOP_EDGE_ADMIN_TOKEN, else the candidate's `refresh.admin_token`.
//
// Exit codes: 0 applied (or a dry-run that would apply), 3 restart_required, 1 rejected or edge unreachable,
// 2 usage (any --mode other than dry-run / apply is refused before the edge is contacted).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULTS, parseConfigText, REFRESH_MODES, type ConfigLoadResult } from '@iop/config';
import { createAdminClient, type AdminClient, type AdminClientOptions } from '../admin/admin-client.js';
import { isAdminError } from '../admin/errors.js';
import { adminTlsFiles, readAdminClientTls } from '../admin/admin-tls.js';
import { formatHostPort, parseListenAddress, reachableHost } from '../net/listen-address.js';
import { fromRefreshConfigResponse, refreshExitCode, type RefreshResult } from '../refresh/refresh-result.js';
import {
  booleanFlag,
  parseFlags,
  stringFlag,
  UsageError,
  writeLine,
  type CliCommand,
  type CliIo,
} from './command.js';
import { configFlag, resolveCommandConfigPath } from './config-source.js';
import { ADMIN_TOKEN_ENV } from './nodes-list.js';
import { systemClock } from '../clock.js';

/** Deadline of the RefreshConfig call: longer than the edge's lock wait plus the node acknowledgement timeout. */
export const REFRESH_CALL_TIMEOUT_MS = 60_000;

export interface ConfigRefreshDeps {
  createClient: (options: AdminClientOptions) => AdminClient;
}

export function createConfigRefreshCommand(
  deps: ConfigRefreshDeps = { createClient: (options) => createAdminClient(options, systemClock) },
): CliCommand {
  return {
    path: ['config', 'refresh'],
    summary: 'Dry-run or apply an edited edge.yaml on a running edge (admin API); exit 3 = restart required.',
    usage: 'config refresh --mode dry-run|apply [--addr host:port] [--json] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        ...configFlag,
        mode: { type: 'string' },
        addr: { type: 'string' },
        json: { type: 'boolean' },
      });
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const mode = stringFlag(flags, 'mode');
      if (mode === undefined || !(REFRESH_MODES as readonly string[]).includes(mode)) {
        throw new UsageError(
          `--mode must be ${REFRESH_MODES.join(' or ')}${mode === undefined ? '' : ` (got '${mode}')`}`,
        );
      }
      const { path: candidatePath } = resolveCommandConfigPath(stringFlag(flags, 'config'), io);
      let text: string;
      try {
        text = await readFile(candidatePath, 'utf8');
      } catch (error) {
        writeLine(io.stderr, `iop-edge config refresh: cannot read ${candidatePath}: ${describe(error)}`);
        return 1;
      }
      const candidate = parseConfigText(text, candidatePath, { baseDir: path.dirname(candidatePath) });
      const client = deps.createClient(await adminTarget(stringFlag(flags, 'addr'), candidate, io));
      let result: RefreshResult;
      try {
        result = fromRefreshConfigResponse(
          await client.refreshConfig({ mode, configYaml: text, configPath: candidatePath }),
        );
      } catch (error) {
        if (!isAdminError(error)) throw error;
        writeLine(io.stderr, `iop-edge config refresh: ${error.message}`);
        return 1;
      } finally {
        client.close();
      }
      if (booleanFlag(flags, 'json')) writeLine(io.stdout, JSON.stringify(result, null, 2));
      else printSummary(io, candidatePath, result);
      return refreshExitCode(result);
    },
  };
}

export const configRefreshCommand = createConfigRefreshCommand();

async function adminTarget(
  addr: string | undefined,
  candidate: ConfigLoadResult,
  io: CliIo,
): Promise<AdminClientOptions> {
  const refresh = candidate.ok ? candidate.config.refresh : undefined;
  const token = io.env[ADMIN_TOKEN_ENV] || refresh?.admin_token || undefined;
  const listen = addr ?? (refresh?.listen || DEFAULTS.refresh_listen);
  // Beyond loopback the admin API speaks TLS with the edge's certificate: trust exactly that key.
  const tls = candidate.ok ? await readAdminClientTls(adminTlsFiles(candidate.config)) : undefined;
  return { address: dialAddress(listen), token, timeoutMs: REFRESH_CALL_TIMEOUT_MS, ...(tls ? { tls } : {}) };
}

/** A wildcard listen address is dialled on loopback. */
function dialAddress(listen: string): string {
  let parsed;
  try {
    parsed = parseListenAddress(listen);
  } catch (error) {
    throw new UsageError(describe(error));
  }
  return formatHostPort(reachableHost(parsed.host), parsed.port);
}

const HEADLINE: Record<RefreshResult['status'], (dryRun: boolean) => string> = {
  applied: (dryRun) =>
    dryRun ? 'would be applied live (dry-run: nothing changed)' : 'applied live (no restart needed)',
  restart_required: () => 'restart required: nothing was applied; restart the edge to use this config',
  rejected: () => 'rejected: nothing was applied',
};

export function printSummary(io: CliIo, candidatePath: string, result: RefreshResult): void {
  writeLine(
    io.stdout,
    `config refresh (${result.mode}) ${candidatePath}: ${HEADLINE[result.status](result.mode !== 'apply')}`,
  );
  const changed: [string, string[]][] = [
    ['nodes', result.changed_nodes],
    ['providers', result.changed_providers],
    ['models', result.changed_models],
  ];
  for (const [label, ids] of changed) {
    if (ids.length > 0) writeLine(io.stdout, `  changed ${label}: ${ids.join(', ')}`);
  }
  if (result.reports.length === 0) writeLine(io.stdout, '  no changes');
  for (const report of result.reports) {
    // A validation issue's reason already starts with its path and line (formatIssue).
    const detail = report.class === 'invalid' ? report.reason : `${report.path}: ${report.reason}`;
    writeLine(io.stdout, `  ${report.class.padEnd(7)} ${report.change.padEnd(8)} ${detail}`);
  }
  if (result.node_results.length > 0) {
    writeLine(io.stdout, '  nodes:');
    for (const node of result.node_results) {
      writeLine(io.stdout, `    ${node.node_id} ${node.status}${node.error ? `: ${node.error}` : ''}`);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
