import { describe, it, expect, jest } from '@jest/globals';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import type { NodeRefreshResult } from '../node/node-config-push.js';
import type { PoolConfig } from '../pool/provider-pool.js';
import { createConfigRefresher, type NodeConfigApplier } from './config-refresher.js';

interface Shape {
  capacity?: number;
  priority?: number;
  maxConcurrency?: number;
  dataDir?: string;
  logging?: string;
}

/** edge.yaml text with two nodes (a, b), one provider each, one model. */
function yaml(shape: Shape = {}): string {
  return `
edge: { listen: "127.0.0.1:0", data_dir: ${shape.dataDir ?? 'data'} }
logging: { level: ${shape.logging ?? 'info'} }
models:
  - { id: m, providers: { pa: served-a, pb: served-b } }
nodes:
  - id: a
    runtime: { max_concurrency: ${shape.maxConcurrency ?? 4} }
    adapters: { instances: [{ name: o, type: ollama, base_url: "http://127.0.0.1:11434" }] }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: o, models: [served-a], capacity: ${shape.capacity ?? 1}, priority: ${shape.priority ?? 0} }
  - id: b
    adapters: { instances: [{ name: o, type: ollama, base_url: "http://127.0.0.1:11434" }] }
    providers:
      - { id: pb, type: ollama, category: local_inference, adapter: o, models: [served-b] }
`;
}

const CONFIG_PATH = '/etc/iop/edge.yaml';

function running(shape: Shape = {}): EdgeConfig {
  const result = parseConfigText(yaml(shape), CONFIG_PATH, { baseDir: '/etc/iop' });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

function setup(pushed: NodeRefreshResult[] = []) {
  const applyConfig = jest.fn<(config: PoolConfig) => void>();
  const applyNodeConfig = jest.fn<NodeConfigApplier>(() => Promise.resolve(pushed));
  const refresher = createConfigRefresher({
    config: running(),
    configPath: CONFIG_PATH,
    routing: { applyConfig },
    applyNodeConfig,
    nodeTimeoutMs: 1234,
  });
  return { refresher, applyConfig, applyNodeConfig };
}

describe('createConfigRefresher', () => {
  it('dry-run classifies and changes nothing', async () => {
    const { refresher, applyConfig, applyNodeConfig } = setup();
    const before = refresher.current();
    const result = await refresher.refresh('dry-run', yaml({ capacity: 2 }), CONFIG_PATH);
    expect(result).toEqual({
      status: 'applied',
      mode: 'dry-run',
      changed_nodes: ['a'],
      changed_providers: ['pa'],
      changed_models: [],
      reports: [
        {
          path: 'nodes[a].providers[pa].capacity',
          change: 'modified',
          class: 'live',
          reason: 'provider capacity is applied to the pool live',
        },
      ],
      node_results: [],
    });
    expect(refresher.current()).toBe(before);
    expect(applyConfig).not.toHaveBeenCalled();
    expect(applyNodeConfig).not.toHaveBeenCalled();
  });

  it('apply swaps the routing state and the current config, then pushes nodes and lists the affected ones', async () => {
    const { refresher, applyConfig, applyNodeConfig } = setup([
      { node_id: 'a', status: 'applied', revision: 'r', error: '' },
      { node_id: 'b', status: 'unchanged', revision: 'r', error: '' },
      { node_id: 'store-only', status: 'timeout', revision: '', error: 'timed out' },
      { node_id: 'z', status: 'not_connected', revision: '', error: '' },
    ]);
    const result = await refresher.refresh('apply', yaml({ capacity: 3, maxConcurrency: 9 }), CONFIG_PATH);
    expect(result.status).toBe('applied');
    expect(applyConfig).toHaveBeenCalledTimes(1);
    const swapped = applyConfig.mock.calls[0]?.[0];
    expect(swapped).toBe(refresher.current());
    expect(refresher.current().nodes[0]?.providers[0]?.capacity).toBe(3);
    expect(applyNodeConfig).toHaveBeenCalledWith(refresher.current(), { timeoutMs: 1234 });
    // 'b' was unchanged and 'z' is neither affected nor connected: left out. A node that was pushed is listed.
    expect(result.node_results).toEqual([
      { node_id: 'a', status: 'applied', error: '' },
      { node_id: 'store-only', status: 'timeout', error: 'timed out' },
    ]);
    expect(refresher.applied).toBe(1);
  });

  it('lists an affected node that is not connected', async () => {
    const { refresher } = setup([
      { node_id: 'a', status: 'not_connected', revision: '', error: '' },
      { node_id: 'b', status: 'not_connected', revision: '', error: '' },
    ]);
    const result = await refresher.refresh('apply', yaml({ maxConcurrency: 2 }), CONFIG_PATH);
    expect(result.node_results).toEqual([{ node_id: 'a', status: 'not_connected', error: '' }]);
  });

  it('a pool-only change pushes nothing that matters to nodes', async () => {
    const { refresher, applyConfig } = setup([
      { node_id: 'a', status: 'unchanged', revision: 'r', error: '' },
      { node_id: 'b', status: 'unchanged', revision: 'r', error: '' },
    ]);
    const result = await refresher.refresh('apply', yaml({ priority: 3 }), CONFIG_PATH);
    expect(result.node_results).toEqual([]);
    expect(applyConfig).toHaveBeenCalledTimes(1);
  });

  it('restart_required and rejected apply nothing', async () => {
    const { refresher, applyConfig, applyNodeConfig } = setup();
    const before = refresher.current();
    const restart = await refresher.refresh('apply', yaml({ capacity: 2, logging: 'debug' }), CONFIG_PATH);
    expect(restart.status).toBe('restart_required');
    expect(restart.reports.find((report) => report.class === 'restart')?.path).toBe('logging.level');
    const rejected = await refresher.refresh('apply', yaml({ capacity: 0 }), CONFIG_PATH);
    expect(rejected.status).toBe('rejected');
    expect(rejected.reports.map((report) => report.path)).toEqual(['nodes[0].providers[0].capacity']);
    expect(refresher.current()).toBe(before);
    expect(applyConfig).not.toHaveBeenCalled();
    expect(applyNodeConfig).not.toHaveBeenCalled();
    expect(refresher.applied).toBe(0);
  });

  it('an invalid mode is rejected at once, without waiting for a running refresh', async () => {
    let release!: () => void;
    const applyNodeConfig = jest.fn<NodeConfigApplier>(
      () => new Promise((resolve) => (release = () => resolve([]))),
    );
    const refresher = createConfigRefresher({ config: running(), applyNodeConfig, waitMs: 10_000 });
    const slow = refresher.refresh('apply', yaml({ maxConcurrency: 5 }), CONFIG_PATH);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const result = await refresher.refresh('APPLY', yaml(), CONFIG_PATH);
    expect(result).toMatchObject({ status: 'rejected', mode: 'APPLY', node_results: [] });
    expect(result.reports).toEqual([
      {
        path: 'mode',
        change: 'modified',
        class: 'invalid',
        reason: "invalid refresh mode 'APPLY': expected dry-run or apply",
      },
    ]);
    release();
    expect((await slow).status).toBe('applied');
  });

  it("resolves a candidate's relative paths against its own file, or the running config's when none is given", async () => {
    const { refresher } = setup();
    expect((await refresher.refresh('dry-run', yaml(), CONFIG_PATH)).reports).toEqual([]);
    expect((await refresher.refresh('dry-run', yaml(), '')).reports).toEqual([]);
    const elsewhere = await refresher.refresh('dry-run', yaml(), '/srv/other/edge.yaml');
    expect(elsewhere.status).toBe('restart_required');
    expect(elsewhere.reports.map((report) => report.path).sort()).toEqual([
      'bootstrap.artifact_dir',
      'edge.data_dir',
    ]);
  });

  it('keeps the current config when the routing swap throws', async () => {
    const refresher = createConfigRefresher({
      config: running(),
      routing: {
        applyConfig: () => {
          throw new Error('pool exploded');
        },
      },
    });
    const before = refresher.current();
    await expect(refresher.refresh('apply', yaml({ capacity: 2 }), CONFIG_PATH)).rejects.toThrow(
      'pool exploded',
    );
    expect(refresher.current()).toBe(before);
    expect(refresher.applied).toBe(0);
    // The gate is free again.
    expect((await refresher.refresh('dry-run', yaml(), CONFIG_PATH)).status).toBe('applied');
  });
});
