// Placement of agent runs: among the providers that can run an agent's CLI profile, the pool prefers one whose node
// has a healthy provider of the profile's fabric_model with room (its model calls then stay on its node), then the
// usual order.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AdapterInstanceConfig, NodeConfig } from '@iop/config';
import { createProviderPool, type PoolConfig, type ProviderPool } from './provider-pool.js';
import { fabricModelOf } from './fabric-model.js';
import {
  connectAll,
  FakeNodes,
  modelConfig,
  nodeConfig,
  providerConfig,
} from './test-support/pool-fixture.js';

/** A cli instance `agents` whose profile `claude` names `fabricModel` (the field the config adds on CLI profiles). */
function agentsInstance(fabricModel: string | undefined): AdapterInstanceConfig {
  return {
    name: 'agents',
    type: 'cli',
    enabled: true,
    profiles: { claude: { command: 'claude', ...(fabricModel ? { fabric_model: fabricModel } : {}) } },
  } as unknown as AdapterInstanceConfig;
}

function agentNode(id: string, fabricModel: string | undefined, withModel: boolean): NodeConfig {
  const providers = [
    providerConfig(`cli-${id}`, {
      type: 'cli',
      category: 'cli',
      adapter: 'agents',
      adapter_instance: 'agents',
      models: ['claude'],
      capacity: 2,
      // The usual order prefers n1.
      priority: id === 'n1' ? 0 : 5,
    }),
    ...(withModel ? [providerConfig(`ol-${id}`, { models: ['qwen'], capacity: 1 })] : []),
  ];
  const node = nodeConfig(id, providers);
  return { ...node, adapters: { instances: [agentsInstance(fabricModel)] } };
}

/** Agents on n1 and n2; the fabric model `coder` is served on n2 only. */
function config(fabricModel: string | undefined): PoolConfig {
  return {
    models: [
      modelConfig('agent', { 'cli-n1': 'claude', 'cli-n2': 'claude' }),
      modelConfig('coder', { 'ol-n2': 'qwen' }),
    ],
    nodes: [agentNode('n1', fabricModel, false), agentNode('n2', fabricModel, true)],
  };
}

const pools: ProviderPool[] = [];

function makePool(poolConfig: PoolConfig): { pool: ProviderPool; nodes: FakeNodes } {
  const nodes = new FakeNodes();
  connectAll(nodes, poolConfig);
  const pool = createProviderPool({ config: poolConfig, nodes, pollIntervalMs: 1000 });
  pools.push(pool);
  return { pool, nodes };
}

afterEach(() => {
  for (const pool of pools.splice(0)) pool.close();
});

describe('agent runs near their fabric model', () => {
  it("reads a CLI profile's fabric_model, and nothing from other instances", () => {
    expect(fabricModelOf(agentsInstance('coder'), 'claude')).toBe('coder');
    expect(fabricModelOf(agentsInstance(undefined), 'claude')).toBeUndefined();
    expect(fabricModelOf(agentsInstance('coder'), 'codex')).toBeUndefined();
    expect(fabricModelOf(undefined, 'claude')).toBeUndefined();
  });

  it('places an agent run on the node where a provider of its fabric model is healthy and has room', async () => {
    const { pool } = makePool(config('coder'));
    const lease = await pool.acquire('agent');
    expect(lease.providerId).toBe('cli-n2');
    lease.release();
  });

  it('falls back to the usual order when that provider is full, unhealthy or its node has none', async () => {
    const { pool, nodes } = makePool(config('coder'));
    // Full: the fabric model's one slot is taken.
    const model = await pool.acquire('coder');
    const whileFull = await pool.acquire('agent');
    expect(whileFull.providerId).toBe('cli-n1');
    whileFull.release();
    model.release();
    // Unhealthy.
    nodes.setHealth('n2', 'ol-n2', 'unhealthy');
    const whileUnhealthy = await pool.acquire('agent');
    expect(whileUnhealthy.providerId).toBe('cli-n1');
    whileUnhealthy.release();
    nodes.setHealth('n2', 'ol-n2', 'healthy');
    // Back: the preference returns.
    const again = await pool.acquire('agent');
    expect(again.providerId).toBe('cli-n2');
    again.release();
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('keeps the usual order for profiles without a fabric model', async () => {
    const { pool } = makePool(config(undefined));
    const lease = await pool.acquire('agent');
    expect(lease.providerId).toBe('cli-n1');
    lease.release();
  });
});
