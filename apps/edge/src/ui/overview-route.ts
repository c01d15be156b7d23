// GET /api/v1/overview and the overview frame of the live feed: the fleet, the pool's providers and models with
// their queues and rejections, the routing table, the totals and the live agent runs, in the JSON of
// agent-contract/outer/ui-api.md.
//
// Every open feed sends the overview each interval: they share one computation and one serialization per half
// interval, so viewers cost bytes on the wire, not a fresh walk of the fleet each.
import type { EdgeConfig } from '@iop/config';
import type {
  UiClusterEdge,
  UiDeparture,
  UiDiscovered,
  UiModel,
  UiNode,
  UiOverview,
  UiProvider,
} from '@iop/ui-api';
import type { Clock } from '../clock.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import type { EdgeService, NodeSummary } from '../service/types.js';
import type { RunLog } from './run-log.js';
import { sseFrame } from './ui-http.js';

type Rejections = Map<string, { r429: number; r503: number }>;

export interface OverviewDeps {
  edgeId: string;
  version: string;
  service: Pick<EdgeService, 'listNodes' | 'agentRuns'>;
  providers: () => UiProvider[];
  clusterEdges?: () => UiClusterEdge[];
  config: () => EdgeConfig;
  rejections?: () => Promise<Rejections>;
  nodeLabel: (nodeId: string) => string;
  departures: () => UiDeparture[];
  runLog: Pick<RunLog, 'running'>;
  clock: Clock;
  /** How often the live feed sends the overview. */
  intervalMs: number;
}

export interface OverviewSource {
  /** The overview now (GET /api/v1/overview). */
  current(): Promise<UiOverview>;
  /** The overview as an SSE frame, shared by the feeds for half an interval. */
  frame(): Promise<string>;
}

export function createOverviewSource(deps: OverviewDeps): OverviewSource {
  const { clock } = deps;
  let shared: { atMs: number; frame: Promise<string> } | undefined;

  async function current(): Promise<UiOverview> {
    return buildOverview(
      deps,
      (await deps.rejections?.()) ?? new Map<string, { r429: number; r503: number }>(),
    );
  }

  return {
    current,
    frame() {
      const now = clock.now();
      if (!shared || now - shared.atMs >= deps.intervalMs / 2) {
        const frame = current().then((value) => sseFrame('overview', value));
        shared = { atMs: now, frame };
        frame.catch(() => {
          if (shared?.frame === frame) shared = undefined;
        });
      }
      return shared.frame;
    },
  };
}

function buildOverview(deps: OverviewDeps, rejections: Rejections): UiOverview {
  const config = deps.config();
  const providers = deps.providers();
  const models = modelRows(config, providers, rejections);
  return {
    edge_id: deps.edgeId,
    version: deps.version,
    now_ms: deps.clock.now(),
    nodes: deps.service.listNodes().map((node) => nodeRow(node, providers, deps.nodeLabel)),
    departures: deps.departures(),
    providers,
    models,
    routes: config.openai.model_routes.map((route) => ({
      model: route.model,
      node: route.node,
      adapter: route.adapter,
      target: route.target,
    })),
    fallback: {
      adapter: config.openai.adapter,
      target: config.openai.target,
      models: [...config.openai.models],
    },
    totals: {
      in_flight: providers.reduce((sum, provider) => sum + provider.in_flight, 0),
      queued: models.reduce((sum, model) => sum + model.queued, 0),
      runs_running: deps.runLog.running(),
    },
    agent_runs: deps.service.agentRuns().map((run) => ({
      run_id: run.runId,
      node_id: run.nodeId,
      principal: run.principal,
      model: run.model,
      live_children: run.liveChildren,
      children: run.children,
      tokens: run.tokens,
      child_tokens: run.childTokens,
    })),
    ...(deps.clusterEdges ? { cluster: { edges: deps.clusterEdges() } } : {}),
  };
}

function nodeRow(
  node: NodeSummary,
  providers: readonly UiProvider[],
  nodeLabel: (nodeId: string) => string,
): UiNode {
  return {
    node_id: node.nodeId,
    alias: node.alias,
    label: nodeLabel(node.nodeId),
    os: node.os,
    arch: node.arch,
    hostname: node.hostname,
    agent_version: node.agentVersion,
    remote_address: node.remoteAddress,
    connected_since_ms: node.connectedSinceUnixMs,
    last_heartbeat_ms: node.lastHeartbeatUnixMs,
    adapters: [...node.adapters],
    providers: node.providers.map((provider) => ({
      provider_id: provider.providerId,
      health: circuitHealth(providers, node.nodeId, provider.providerId) ?? provider.health,
      detail: provider.detail,
      cause: provider.cause,
      checked_at_ms: provider.checkedAtUnixMs,
    })),
    discovered: node.discovered ? discoveredView(node.discovered) : null,
  };
}

function modelRows(config: EdgeConfig, providers: readonly UiProvider[], rejections: Rejections): UiModel[] {
  return config.models.map((model) => {
    const ids = Object.keys(model.providers);
    const queued = Math.max(
      0,
      ...providers.filter((provider) => ids.includes(provider.provider_id)).map((p) => p.queued),
    );
    const rejected = rejections.get(model.id);
    return {
      id: model.id,
      display_name: model.display_name,
      providers: { ...model.providers },
      queued,
      rejected_429: rejected?.r429 ?? 0,
      rejected_503: rejected?.r503 ?? 0,
    };
  });
}

function discoveredView(discovered: NodeDiscovered): UiDiscovered {
  return {
    backends: discovered.backends.map((backend) => ({
      kind: backend.kind,
      base_url: backend.baseUrl,
      models: [...backend.models],
      loaded_models: [...backend.loadedModels],
      version: backend.version,
    })),
    clis: discovered.clis.map((cli) => ({ name: cli.name, path: cli.path, version: cli.version })),
    host: {
      cpu_cores: discovered.host.cpuCores,
      memory_bytes: discovered.host.memoryBytes,
      gpus: discovered.host.gpus.map((gpu) => ({
        name: gpu.name,
        vendor: gpu.vendor,
        memory_bytes: gpu.memoryBytes,
      })),
    },
    discovered_at_ms: discovered.discoveredAtUnixMs,
  };
}

/** The pool's `open` / `half_open` for a provider whose circuit is not closed (one health state everywhere). */
function circuitHealth(
  providers: readonly UiProvider[],
  nodeId: string,
  providerId: string,
): string | undefined {
  const pooled = providers.find((entry) => entry.provider_id === providerId && entry.node_id === nodeId);
  return pooled && (pooled.health === 'open' || pooled.health === 'half_open') ? pooled.health : undefined;
}
