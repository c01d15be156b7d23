// The e2e fabric (fabric-config.ts) plus agents on it (issue 42): a one-shot CLI profile `fab` on node n1 — the
// testkit fake CLI in its `--model-calls N` mode — whose `fabric_model` is the node's Ollama model, served as the
// models[] id AGENT_MODEL by a cli provider `n1-agents`.
import { fabricConfig, MODEL_LLAMA, type FabricNode } from './fabric-config.js';

export const AGENT_MODEL = 'e2e-fabric-agent';

export interface AgentFabricOptions {
  dataDir: string;
  node: FabricNode;
  /** Model calls each agent run makes. */
  calls: number;
  /** Capacity of the agents' cli provider (default 4). */
  agentCapacity?: number;
  /** More fake-CLI flags of the agent (e.g. `--think-ms 500`, `--fail-on-model-error`). */
  agentArgs?: string[];
  /** More nodes of the fabric (plain fabric-config nodes, without agents). */
  otherNodes?: FabricNode[];
}

export function agentFabricConfig(options: AgentFabricOptions): Record<string, unknown> {
  const config = fabricConfig({
    dataDir: options.dataDir,
    nodes: [options.node, ...(options.otherNodes ?? [])],
  }) as {
    models: Record<string, unknown>[];
    nodes: { adapters: { instances: Record<string, unknown>[] }; providers: Record<string, unknown>[] }[];
  };
  config.models.push({ id: AGENT_MODEL, providers: { [`${options.node.id}-agents`]: 'fab' } });
  const [node] = config.nodes;
  if (!node) throw new Error('no node');
  node.adapters.instances.push({
    name: 'agents',
    type: 'cli',
    enabled: true,
    fabric_model: MODEL_LLAMA,
    profiles: {
      fab: {
        command: 'bin/iop-fake-cli',
        mode: 'oneshot',
        args: ['--model-calls', String(options.calls), ...(options.agentArgs ?? [])],
        env: {
          IOP_MODEL_BASE_URL: '{model_base_url}',
          IOP_MODEL_API_KEY: '{model_api_key}',
          IOP_MODEL: '{model}',
        },
        request_timeout_ms: 45_000,
      },
    },
  });
  node.providers.push({
    id: `${options.node.id}-agents`,
    type: 'cli',
    category: 'cli',
    adapter: 'agents',
    models: ['fab'],
    capacity: options.agentCapacity ?? 4,
    max_queue: 16,
    queue_timeout_ms: 45_000,
  });
  return config;
}
