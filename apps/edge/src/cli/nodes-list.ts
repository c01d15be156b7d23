// `iop-edge nodes list`: the nodes connected to a running edge, read through its admin API (gRPC on
// `refresh.listen`). The address and token come from the config unless `--addr` is given; a token can also come
// from IOP_EDGE_ADMIN_TOKEN so it never has to appear on a command line.
import { systemClock } from '../clock.js';
import type { NodeInfo } from '@iop/wire';
import { createAdminClient, type AdminClient, type AdminClientOptions } from '../admin/admin-client.js';
import { isAdminError } from '../admin/errors.js';
import { discoveredToJson, discoverySummary, fromWireDiscovery } from '../present/node-discovered.js';
import { terminalText } from '../present/terminal-text.js';
import { adminTlsFiles, readAdminClientTls } from '../admin/admin-tls.js';
import { formatHostPort, parseListenAddress, reachableHost } from '../net/listen-address.js';
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
import { configFlag, loadCommandConfig, printConfigIssues } from './config-source.js';

export const ADMIN_TOKEN_ENV = 'IOP_EDGE_ADMIN_TOKEN';

export interface NodesListDeps {
  createClient: (options: AdminClientOptions) => AdminClient;
  now: () => number;
}

export function createNodesListCommand(
  deps: NodesListDeps = {
    createClient: (options) => createAdminClient(options, systemClock),
    now: () => systemClock.now(),
  },
): CliCommand {
  return {
    path: ['nodes', 'list'],
    summary: `List the nodes connected to a running edge (admin API; token from config or ${ADMIN_TOKEN_ENV}).`,
    usage: 'nodes list [--json] [--addr host:port] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, { ...configFlag, json: { type: 'boolean' }, addr: { type: 'string' } });
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const target = await adminTarget(stringFlag(flags, 'addr'), stringFlag(flags, 'config'), io);
      if (!target) return 1;
      const client = deps.createClient(target);
      try {
        const nodes = await client.listNodes();
        if (booleanFlag(flags, 'json'))
          writeLine(io.stdout, JSON.stringify({ nodes: nodes.map(toJson) }, null, 2));
        else printTable(io, nodes, deps.now());
        return 0;
      } catch (error) {
        if (!isAdminError(error)) throw error;
        writeLine(io.stderr, `iop-edge nodes list: ${error.message}`);
        return 1;
      } finally {
        client.close();
      }
    },
  };
}

export const nodesListCommand = createNodesListCommand();

/**
 * Where the admin API is and which token to send. `--addr` wins over `refresh.listen`; a config that cannot be
 * loaded is only fatal when it is needed for the address. A wildcard listen address is dialled on loopback.
 */
export async function adminTarget(
  addr: string | undefined,
  configPath: string | undefined,
  io: CliIo,
): Promise<AdminClientOptions | undefined> {
  const loaded = await loadCommandConfig(configPath, io);
  const envToken = io.env[ADMIN_TOKEN_ENV];
  // Beyond loopback the admin API speaks TLS with the edge's certificate: trust exactly that key.
  const tls = loaded.result.ok ? await readAdminClientTls(adminTlsFiles(loaded.result.config)) : undefined;
  const secure = tls ? { tls } : {};
  if (addr) {
    const token = envToken || (loaded.result.ok ? loaded.result.config.refresh.admin_token : '');
    return { address: dialAddress(addr), token: token || undefined, ...secure };
  }
  if (!loaded.result.ok) {
    printConfigIssues(io, loaded.path, loaded.result.issues);
    return undefined;
  }
  const { listen, admin_token: configToken } = loaded.result.config.refresh;
  if (!listen)
    throw new UsageError(`refresh.listen is empty in ${loaded.path}: the admin API is off; pass --addr`);
  return { address: dialAddress(listen), token: envToken || configToken || undefined, ...secure };
}

function dialAddress(listen: string): string {
  let parsed;
  try {
    parsed = parseListenAddress(listen);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  return formatHostPort(reachableHost(parsed.host), parsed.port);
}

function toJson(node: NodeInfo): Record<string, unknown> {
  return {
    node_id: node.nodeId,
    alias: node.alias,
    agent_version: node.agentVersion,
    os: node.os,
    arch: node.arch,
    hostname: node.hostname,
    remote_address: node.remoteAddress,
    connected_since: isoTime(node.connectedSinceUnixMs),
    connected_since_unix_ms: node.connectedSinceUnixMs,
    last_heartbeat: isoTime(node.lastHeartbeatUnixMs),
    last_heartbeat_unix_ms: node.lastHeartbeatUnixMs,
    adapters: node.adapters,
    discovered: node.discovered ? discoveredToJson(fromWireDiscovery(node.discovered)) : null,
    // Cluster mode only: the edge the node is connected to.
    ...(node.edgeId ? { edge_id: node.edgeId } : {}),
    // The key the node proved at registration; null for an agent without identity support.
    identity_fingerprint: node.identityFingerprint || null,
    providers: node.providers.map((provider) => ({
      provider_id: provider.providerId,
      status: provider.status,
      health: provider.health,
      // The node's last probe: its finding in words, and why it failed (connection_refused, tls, http_status…).
      health_detail: provider.healthDetail,
      health_cause: provider.healthCause,
      capacity: provider.capacity,
      in_flight: provider.inFlight,
      queued: provider.queued,
      served_models: provider.servedModels,
      priority: provider.priority,
      // Served models the node reports loaded on the backend (Ollama /api/ps); state fresh | stale | unknown.
      resident_models: provider.residentModels,
      resident_state: provider.residentState || 'unknown',
    })),
    // Agent runs on the node with their model calls (child runs): how many are live, tokens so far.
    agent_runs: node.agentRuns.map((run) => ({
      run_id: run.runId,
      principal: run.principal,
      model: run.model,
      live_children: run.liveChildren,
      children: run.children,
      tokens: run.tokens,
      child_tokens: run.childTokens,
    })),
  };
}

function printTable(io: CliIo, nodes: NodeInfo[], now: number): void {
  if (nodes.length === 0) {
    writeLine(io.stdout, 'no nodes connected');
    return;
  }
  const header = [
    'NODE',
    'ALIAS',
    'VERSION',
    'PLATFORM',
    'HOST',
    'ADDRESS',
    'CONNECTED',
    'HEARTBEAT',
    'ADAPTERS',
    'IDENTITY',
    'DISCOVERED',
  ];
  // Cluster mode: an EDGE column (the edge each node is connected to); a single edge prints none.
  const clustered = nodes.some((node) => node.edgeId !== '');
  if (clustered) header.splice(1, 0, 'EDGE');
  const rows = nodes.map((node) => [
    node.nodeId,
    ...(clustered ? [node.edgeId || '-'] : []),
    node.alias || '-',
    node.agentVersion || '-',
    `${node.os || '?'}/${node.arch || '?'}`,
    node.hostname || '-',
    node.remoteAddress || '-',
    isoTime(node.connectedSinceUnixMs) ?? '-',
    node.lastHeartbeatUnixMs
      ? `${Math.max(0, Math.round((now - node.lastHeartbeatUnixMs) / 1000))}s ago`
      : '-',
    node.adapters.length > 0 ? node.adapters.join(',') : '-',
    shortFingerprint(node.identityFingerprint),
    discoverySummary(node.discovered ? fromWireDiscovery(node.discovered) : undefined),
  ]);
  // Every cell but the times is the node's own word: no escape sequence of a node reaches the terminal.
  writeTable(
    io.stdout,
    header,
    rows.map((row) => row.map((cell) => terminalText(cell))),
  );
}

/** The first 12 hex digits of an identity fingerprint (the whole one is in --json); '-' for none. */
function shortFingerprint(fingerprint: string): string {
  return fingerprint ? `${fingerprint.slice(0, 'sha256:'.length + 12)}…` : '-';
}

function isoTime(unixMs: number): string | null {
  return unixMs > 0 ? new Date(unixMs).toISOString().replace(/\.\d{3}Z$/, 'Z') : null;
}
