// Test support: small pool configs and a mutable set of connected nodes standing in for the node registry.
import type { ModelConfig, NodeConfig, ProviderConfig } from '@iop/config';
import type { NodeSummary, ProviderHealthSummary } from '../../present/node-summary.js';
import type { PoolConfig } from '../provider-pool.js';

export function providerConfig(id: string, fields: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    id,
    type: 'vllm',
    category: 'api',
    adapter: 'openai_compat',
    adapter_instance: 'openai_compat',
    models: [`served-${id}`],
    capacity: 1,
    max_queue: 8,
    queue_timeout_ms: 5000,
    enabled: true,
    priority: 0,
    lifecycle_capabilities: [],
    health: { enabled: true, interval_ms: null },
    ...fields,
  };
}

export function nodeConfig(id: string, providers: ProviderConfig[]): NodeConfig {
  return {
    id,
    alias: id,
    agent_kind: 'iop-node',
    token: '',
    token_sha256: '',
    runtime: { max_concurrency: 4, health_probe_interval_ms: 5000, resident_poll_interval_ms: 5000 },
    adapters: { instances: [] },
    discovery: { openai_compat_urls: [], local_ports: [] },
    providers,
  };
}

export function modelConfig(
  id: string,
  providers: Record<string, string>,
  fields: Partial<ModelConfig> = {},
): ModelConfig {
  return {
    id,
    display_name: id,
    providers,
    default_max_tokens: null,
    min_max_tokens: null,
    default_thinking_token_budget: null,
    drop_unsupported: false,
    fetch_image_urls: false,
    image_limits: { max_urls: 16, max_total_bytes: 64 * 1024 * 1024 },
    affinity: { enabled: true, hash_messages: true, max_wait_ms: 0 },
    retry: { max_attempts: null },
    ...fields,
  };
}

/** One model `m` served by the given providers (served name `served-<id>`), one node per provider. */
export function poolConfig(providers: ProviderConfig[], model = 'm'): PoolConfig {
  return {
    models: [modelConfig(model, Object.fromEntries(providers.map((p) => [p.id, `served-${p.id}`])))],
    nodes: providers.map((provider) => nodeConfig(`node-${provider.id}`, [provider])),
  };
}

/** Connected nodes the test can connect, disconnect and mark unhealthy. */
export class FakeNodes {
  private readonly nodes = new Map<string, NodeSummary>();

  connect(nodeId: string, health: Record<string, ProviderHealthSummary['health']> = {}): void {
    this.nodes.set(nodeId, {
      nodeId,
      alias: nodeId,
      agentVersion: 'test',
      os: 'linux',
      arch: 'x64',
      hostname: 'localhost',
      remoteAddress: '127.0.0.1:1',
      connectedSinceUnixMs: 0,
      lastHeartbeatUnixMs: 0,
      adapters: ['openai_compat'],
      providers: Object.entries(health).map(([providerId, state]) => ({
        providerId,
        health: state,
        detail: '',
        cause: '',
        checkedAtUnixMs: 0,
      })),
    });
  }

  disconnect(nodeId: string): void {
    this.nodes.delete(nodeId);
  }

  setHealth(nodeId: string, providerId: string, health: ProviderHealthSummary['health']): void {
    const node = this.nodes.get(nodeId);
    if (!node) throw new Error(`node ${nodeId} is not connected`);
    node.providers = [
      ...node.providers.filter((entry) => entry.providerId !== providerId),
      { providerId, health, detail: '', cause: '', checkedAtUnixMs: 0 },
    ];
  }

  /** The node's report of what `providerId`'s backend holds loaded (undefined = unknown, as an older node). */
  setResident(nodeId: string, providerId: string, resident: ProviderHealthSummary['resident']): void {
    const node = this.nodes.get(nodeId);
    if (!node) throw new Error(`node ${nodeId} is not connected`);
    const previous = node.providers.find((entry) => entry.providerId === providerId) ?? {
      providerId,
      health: 'healthy' as const,
      detail: '',
      cause: '',
      checkedAtUnixMs: 0,
    };
    const { resident: _dropped, ...rest } = previous;
    void _dropped;
    node.providers = [
      ...node.providers.filter((entry) => entry.providerId !== providerId),
      resident ? { ...rest, resident } : rest,
    ];
  }

  list = (): NodeSummary[] => [...this.nodes.values()];

  /** NodeDirectory: the connected node with that id. */
  get = (nodeId: string): NodeSummary | undefined => this.nodes.get(nodeId);
}

/** Connects every node of a config. */
export function connectAll(nodes: FakeNodes, config: PoolConfig): void {
  for (const node of config.nodes) nodes.connect(node.id);
}
