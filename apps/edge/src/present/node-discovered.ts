// What a node reported it can run (the NodeDiscovery frame), in the edge's own terms: model servers with their
// served models, coding-agent CLIs with their versions, and host facts. The link keeps the latest report per
// node; `nodes list`, the console, the metrics and `node adopt` read it from the node summary.
import type { NodeDiscovery } from '@iop/wire';

export interface DiscoveredBackend {
  /** ollama | vllm | llama.cpp | lmstudio | sglang | openai_compat */
  kind: string;
  /** Server root; OpenAI-compatible servers end in /v1. */
  baseUrl: string;
  models: string[];
  version: string;
  loadedModels: string[];
}

export interface DiscoveredCli {
  /** claude | codex | opencode | cline | agy */
  name: string;
  path: string;
  version: string;
}

export interface DiscoveredGpu {
  name: string;
  memoryBytes: number;
  vendor: string;
}

export interface DiscoveredHost {
  os: string;
  arch: string;
  cpuCores: number;
  memoryBytes: number;
  gpus: DiscoveredGpu[];
  /** The node's CLI agents run as a user of their own; false (and every older node): they share its user. */
  agentsSeparateUser: boolean;
  /** With `agentsSeparateUser`: the user the agents run as and their default workspace directory ('' otherwise). */
  agentUser: string;
  agentWorkspaceRoot: string;
}

export interface NodeDiscovered {
  backends: DiscoveredBackend[];
  clis: DiscoveredCli[];
  host: DiscoveredHost;
  discoveredAtUnixMs: number;
}

export function fromWireDiscovery(discovery: NodeDiscovery): NodeDiscovered {
  const host = discovery.host;
  return {
    backends: discovery.backends.map((backend) => ({
      kind: backend.kind,
      baseUrl: backend.baseUrl,
      models: [...backend.models],
      version: backend.version,
      loadedModels: [...backend.loadedModels],
    })),
    clis: discovery.clis.map((cli) => ({ name: cli.name, path: cli.path, version: cli.version })),
    host: {
      os: host?.os ?? '',
      arch: host?.arch ?? '',
      cpuCores: host?.cpuCores ?? 0,
      memoryBytes: host?.memoryBytes ?? 0,
      gpus: (host?.gpus ?? []).map((gpu) => ({
        name: gpu.name,
        memoryBytes: gpu.memoryBytes,
        vendor: gpu.vendor,
      })),
      agentsSeparateUser: host?.agentsSeparateUser ?? false,
      agentUser: host?.agentsSeparateUser ? host.agentUser : '',
      agentWorkspaceRoot: host?.agentsSeparateUser ? host.agentWorkspaceRoot : '',
    },
    discoveredAtUnixMs: discovery.discoveredAtUnixMs,
  };
}

export function toWireDiscovery(discovered: NodeDiscovered): NodeDiscovery {
  return {
    backends: discovered.backends.map((backend) => ({ ...backend, models: [...backend.models] })),
    clis: discovered.clis.map((cli) => ({ ...cli })),
    host: { ...discovered.host, gpus: discovered.host.gpus.map((gpu) => ({ ...gpu })) },
    discoveredAtUnixMs: discovered.discoveredAtUnixMs,
  };
}

/** The `--json` shape: snake_case keys like the rest of the CLI's JSON output. */
export function discoveredToJson(discovered: NodeDiscovered): Record<string, unknown> {
  return {
    backends: discovered.backends.map((backend) => ({
      kind: backend.kind,
      base_url: backend.baseUrl,
      models: backend.models,
      loaded_models: backend.loadedModels,
      version: backend.version,
    })),
    clis: discovered.clis.map((cli) => ({ name: cli.name, path: cli.path, version: cli.version })),
    host: {
      os: discovered.host.os,
      arch: discovered.host.arch,
      cpu_cores: discovered.host.cpuCores,
      memory_bytes: discovered.host.memoryBytes,
      gpus: discovered.host.gpus.map((gpu) => ({
        name: gpu.name,
        vendor: gpu.vendor,
        memory_bytes: gpu.memoryBytes,
      })),
      // A prompt on this node's CLI agents can read the node's token, identity key and history.
      agents_share_node_user: !discovered.host.agentsSeparateUser,
      agent_user: discovered.host.agentUser,
      agent_workspace_root: discovered.host.agentWorkspaceRoot,
    },
    discovered_at: new Date(discovered.discoveredAtUnixMs).toISOString(),
  };
}

/**
 * One line per node: `ollama: 3 models · vllm: 1 model · claude 2.1 · codex · 1× GPU 24 GB · agents share node
 * user` (the last when it has CLIs whose agents run as the node's own user). A CLI shows its
 * version's leading number (`2.x` style detail stays in `--json`); GPUs of the same size are counted together.
 */
export function discoverySummary(discovered: NodeDiscovered | undefined): string {
  if (!discovered) return 'not reported';
  const parts: string[] = [];
  for (const backend of discovered.backends) {
    const count = backend.models.length;
    parts.push(`${backend.kind}: ${count} model${count === 1 ? '' : 's'}`);
  }
  for (const cli of discovered.clis) {
    const version = shortVersion(cli.version);
    parts.push(version ? `${cli.name} ${version}` : cli.name);
  }
  const gpuGroups = new Map<string, number>();
  for (const gpu of discovered.host.gpus) {
    const label = gpu.memoryBytes > 0 ? `GPU ${formatGigabytes(gpu.memoryBytes)}` : 'GPU';
    gpuGroups.set(label, (gpuGroups.get(label) ?? 0) + 1);
  }
  for (const [label, count] of gpuGroups) parts.push(`${count}× ${label}`);
  // Only where it matters: CLI agents that share the node's user can read its secrets.
  if (discovered.clis.length > 0 && !discovered.host.agentsSeparateUser) parts.push('agents share node user');
  return parts.length > 0 ? parts.join(' · ') : 'nothing found';
}

/** `2.0.14 (Claude Code)` → `2.0.14`; `codex-cli 0.46.0` → `0.46.0`; '' when no version number is present. */
export function shortVersion(version: string): string {
  return /\d+(?:\.\d+)*/.exec(version)?.[0] ?? '';
}

function formatGigabytes(bytes: number): string {
  return `${Math.round(bytes / 1024 ** 3)} GB`;
}
