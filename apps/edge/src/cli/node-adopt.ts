// `iop-edge node adopt <node-id> [--dry-run] [--only ollama,codex,…] [--fabric-model ID] [--addr host:port]
// [--config P]`: turns what a
// connected node discovered (read through the admin API) into edge.yaml entries — an adapter instance and a
// provider per model server, one CLI instance with the shipped profiles, models[] per served model — and applies
// them through the live refresh. `--dry-run` prints the YAML it would add and changes nothing. Otherwise the YAML
// document is edited in place (the operator's comments and layout stay), validated as a whole, written
// atomically, and sent to the edge as a refresh (`apply`), whose result is printed. `--fabric-model ID` adds,
// beside each CLI's profile, its `<cli>-fabric` profile calling the pool's model ID (issue 42).
//
// Notes (clashes with existing models[] ids, servers or CLIs already configured) go to stderr, so a dry run's
// stdout is only YAML. Exit codes: as `config refresh` (0 applied or nothing to do, 3 restart required, 1
// rejected / not connected / nothing reported / unreachable), 2 usage.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { appendNodeEntries, isConfigError, parseConfigText, renderNodeEntries } from '@iop/config';
import { createAdminClient, type AdminClient, type AdminClientOptions } from '../admin/admin-client.js';
import { isAdminError } from '../admin/errors.js';
import { ADOPTABLE_KINDS, planAdoption, type AdoptionPlan } from '../adopt/adoption-plan.js';
import { formatHostPort, parseListenAddress, reachableHost } from '../net/listen-address.js';
import { fromWireDiscovery } from '../present/node-discovered.js';
import { fromRefreshConfigResponse, refreshExitCode } from '../refresh/refresh-result.js';
import { booleanFlag, parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { printSummary, REFRESH_CALL_TIMEOUT_MS } from './config-refresh.js';
import { configFlag, loadValidConfig, printConfigIssues } from './config-source.js';
import { writeAtomically } from './keys-create.js';
import { ADMIN_TOKEN_ENV } from './nodes-list.js';
import { systemClock } from '../clock.js';

export interface NodeAdoptDeps {
  createClient: (options: AdminClientOptions) => AdminClient;
}

const NAME = 'iop-edge node adopt';

export function createNodeAdoptCommand(
  deps: NodeAdoptDeps = { createClient: (options) => createAdminClient(options, systemClock) },
): CliCommand {
  return {
    path: ['node', 'adopt'],
    summary:
      'Add what a connected node discovered (model servers, agent CLIs) to edge.yaml and apply it live.',
    usage:
      'node adopt <node-id> [--dry-run] [--only ollama,vllm,claude,codex,...] [--fabric-model ID] [--addr host:port] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        ...configFlag,
        'dry-run': { type: 'boolean' },
        only: { type: 'string' },
        'fabric-model': { type: 'string' },
        addr: { type: 'string' },
      });
      const [nodeId, ...extra] = flags.positionals;
      if (!nodeId) throw new UsageError('a node id is required');
      if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
      const only = onlyKinds(stringFlag(flags, 'only'));
      const source = await loadValidConfig(stringFlag(flags, 'config'), io);
      if (!source) return 1;
      const text = await readFile(source.path, 'utf8');
      const { refresh } = source.config;
      const addr = stringFlag(flags, 'addr') ?? refresh.listen;
      if (!addr)
        throw new UsageError(`refresh.listen is empty in ${source.path}: the admin API is off; pass --addr`);
      const client = deps.createClient({
        address: dialAddress(addr),
        token: io.env[ADMIN_TOKEN_ENV] || refresh.admin_token || undefined,
        timeoutMs: REFRESH_CALL_TIMEOUT_MS,
      });
      try {
        const node = (await client.listNodes()).find((candidate) => candidate.nodeId === nodeId);
        if (!node) {
          writeLine(io.stderr, `${NAME}: node ${nodeId} is not connected (see iop-edge nodes list)`);
          return 1;
        }
        if (!node.discovered) {
          writeLine(
            io.stderr,
            `${NAME}: node ${nodeId} has not reported what it can run yet (an iop-node without discovery?)`,
          );
          return 1;
        }
        const plan = planAdoption(
          source.config,
          nodeId,
          fromWireDiscovery(node.discovered),
          only,
          stringFlag(flags, 'fabric-model'),
        );
        for (const note of plan.notes) writeLine(io.stderr, `note: ${note}`);
        if (isEmpty(plan)) {
          writeLine(io.stdout, `nothing to adopt for node ${nodeId}`);
          return 0;
        }
        if (booleanFlag(flags, 'dry-run')) {
          writeLine(
            io.stdout,
            `# ${NAME} ${nodeId} --dry-run: entries that would be added to ${source.path} (nothing written)`,
          );
          io.stdout.write(renderNodeEntries(plan.entries));
          return 0;
        }
        let next: string;
        try {
          next = appendNodeEntries(text, plan.entries);
        } catch (error) {
          if (!isConfigError(error)) throw error;
          writeLine(io.stderr, `${NAME}: ${source.path}: ${error.message}`);
          return 1;
        }
        const checked = parseConfigText(next, source.path, { baseDir: path.dirname(source.path) });
        if (!checked.ok) {
          writeLine(
            io.stderr,
            `${NAME}: not written: ${source.path} would be invalid with the adopted entries:`,
          );
          printConfigIssues(io, source.path, checked.issues);
          return 1;
        }
        await writeAtomically(source.path, next);
        writeLine(io.stdout, `adopted into ${source.path}: ${describePlan(plan)}`);
        const result = fromRefreshConfigResponse(
          await client.refreshConfig({ mode: 'apply', configYaml: next, configPath: source.path }),
        );
        printSummary(io, source.path, result);
        return refreshExitCode(result);
      } catch (error) {
        if (!isAdminError(error)) throw error;
        writeLine(io.stderr, `${NAME}: ${error.message}`);
        return 1;
      } finally {
        client.close();
      }
    },
  };
}

export const nodeAdoptCommand = createNodeAdoptCommand();

function onlyKinds(value: string | undefined): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  const kinds = value
    .split(',')
    .map((kind) => kind.trim())
    .filter((kind) => kind !== '');
  const unknown = kinds.filter((kind) => !ADOPTABLE_KINDS.includes(kind));
  if (kinds.length === 0 || unknown.length > 0) {
    throw new UsageError(
      `--only takes a comma-separated list of ${ADOPTABLE_KINDS.join(', ')}` +
        (unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''),
    );
  }
  return new Set(kinds);
}

function isEmpty(plan: AdoptionPlan): boolean {
  const { instances, providers, models } = plan.entries;
  return instances.length === 0 && providers.length === 0 && models.length === 0;
}

function describePlan(plan: AdoptionPlan): string {
  const names = (entries: readonly { value: Readonly<Record<string, unknown>> }[], key: string) =>
    entries.map((entry) => String(entry.value[key])).join(', ') || '-';
  return (
    `${plan.newNode ? `node ${plan.entries.nodeId} added; ` : ''}` +
    `instances ${names(plan.entries.instances, 'name')}; providers ${names(plan.entries.providers, 'id')}; ` +
    `models ${names(plan.entries.models, 'id')}`
  );
}

/** A wildcard listen address is dialled on loopback. */
function dialAddress(listen: string): string {
  try {
    const parsed = parseListenAddress(listen);
    return formatHostPort(reachableHost(parsed.host), parsed.port);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}
