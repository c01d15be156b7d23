// Capacity settings that are valid but do not do what they seem to: a node whose providers' capacities add up to
// more than its runtime.max_concurrency. The edge bounds dispatch by both (agent-contract/inner/
// edge-config-runtime-refresh.md), so the node limit wins and part of the provider capacity can never be used at
// once. `config check` prints these as warnings; they never fail a config.
import type { EdgeConfig } from './types.js';

export function capacityWarnings(config: Pick<EdgeConfig, 'nodes'>): string[] {
  const warnings: string[] = [];
  config.nodes.forEach((node, index) => {
    const limit = node.runtime.max_concurrency;
    const enabled = node.providers.filter((provider) => provider.enabled);
    const total = enabled.reduce((sum, provider) => sum + provider.capacity, 0);
    if (limit === 0 || total <= limit) return;
    const list = enabled.map((provider) => `${provider.id}=${provider.capacity}`).join(', ');
    warnings.push(
      `nodes[${index}] (${node.id}): enabled provider capacities add up to ${total} (${list}) but ` +
        `runtime.max_concurrency is ${limit}; the node limit wins: at most ${limit} runs go to this node at once ` +
        `and the rest wait in their model's queue`,
    );
  });
  return warnings;
}
