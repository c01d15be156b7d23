import { systemClock } from '../clock.js';
import { describe, it, expect, jest } from '@jest/globals';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import type { NodeConfigApplyOptions, NodeRefreshResult } from '../node/node-config-push.js';
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

/**
 * A node applier that behaves like the runtime's: it commits (switches the edge) only when no node refused,
 * otherwise answers `rejected` with the results after "reverting" (applied → reverted).
 */
function fakeApplier(pushed: NodeRefreshResult[]) {
  return jest.fn<NodeConfigApplier>((_config, options: NodeConfigApplyOptions) => {
    const refused = pushed.some((result) => result.status === 'failed' || result.status === 'timeout');
    if (!refused) {
      try {
        options.commit?.();
        return Promise.resolve({ status: 'applied' as const, results: pushed, error: '' });
      } catch (error) {
        return Promise.resolve({ status: 'rejected' as const, results: pushed, error: String(error) });
      }
    }
    const results = pushed.map((result) =>
      result.status === 'applied' ? { ...result, status: 'reverted' as const } : result,
    );
    return Promise.resolve({ status: 'rejected' as const, results, error: '' });
  });
}

function setup(pushed: NodeRefreshResult[] = []) {
  const applyConfig = jest.fn<(config: PoolConfig) => void>();
  const applyNodeConfig = fakeApplier(pushed);
  const refresher = createConfigRefresher({
    clock: systemClock,
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

  it('apply pushes the nodes first and swaps the routing state and the current config once all acknowledged', async () => {
    const { refresher, applyConfig, applyNodeConfig } = setup([
      { node_id: 'a', status: 'applied', revision: 'r', error: '' },
      { node_id: 'b', status: 'unchanged', revision: 'r', error: '' },
      { node_id: 'store-only', status: 'applied', revision: 'r', error: '' },
      { node_id: 'z', status: 'not_connected', revision: '', error: '' },
    ]);
    const result = await refresher.refresh('apply', yaml({ capacity: 3, maxConcurrency: 9 }), CONFIG_PATH);
    expect(result.status).toBe('applied');
    expect(applyConfig).toHaveBeenCalledTimes(1);
    const swapped = applyConfig.mock.calls[0]?.[0];
    expect(swapped).toBe(refresher.current());
    expect(refresher.current().nodes[0]?.providers[0]?.capacity).toBe(3);
    expect(applyNodeConfig).toHaveBeenCalledWith(refresher.current(), {
      timeoutMs: 1234,
      commit: expect.any(Function) as unknown as () => void,
    });
    // 'b' was unchanged and 'z' is neither affected nor connected: left out. A node that was pushed is listed.
    expect(result.node_results).toEqual([
      { node_id: 'a', status: 'applied', error: '' },
      { node_id: 'store-only', status: 'applied', error: '' },
    ]);
    expect(refresher.applied).toBe(1);
  });

  it('a node that refuses or times out makes the apply rejected: the edge keeps its state, each node is reported', async () => {
    const { refresher, applyConfig } = setup([
      { node_id: 'a', status: 'applied', revision: 'r', error: '' },
      { node_id: 'b', status: 'failed', revision: 'r0', error: 'adapter rebuild failed' },
      { node_id: 'c', status: 'timeout', revision: 'r0', error: 'timed out after 1234 ms' },
    ]);
    const before = refresher.current();
    const result = await refresher.refresh('apply', yaml({ capacity: 3, maxConcurrency: 9 }), CONFIG_PATH);
    expect(result.status).toBe('rejected');
    expect(applyConfig).not.toHaveBeenCalled();
    expect(refresher.current()).toBe(before);
    expect(refresher.applied).toBe(0);
    expect(result.node_results).toEqual([
      { node_id: 'a', status: 'reverted', error: '' },
      { node_id: 'b', status: 'failed', error: 'adapter rebuild failed' },
      { node_id: 'c', status: 'timeout', error: 'timed out after 1234 ms' },
    ]);
    expect(result.reports.filter((report) => report.class === 'invalid')).toEqual([
      {
        path: 'nodes[b]',
        change: 'modified',
        class: 'invalid',
        reason:
          'nodes[b]: the node did not apply its new payload (failed: adapter rebuild failed); nothing was applied',
      },
      {
        path: 'nodes[c]',
        change: 'modified',
        class: 'invalid',
        reason:
          'nodes[c]: the node did not apply its new payload (timeout: timed out after 1234 ms); nothing was applied',
      },
    ]);
    // The live classification is still reported beside the causes.
    expect(result.reports.some((report) => report.class === 'live')).toBe(true);
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
      (_config, options) =>
        new Promise((resolve) => {
          release = () => {
            options.commit?.();
            resolve({ status: 'applied', results: [], error: '' });
          };
        }),
    );
    const refresher = createConfigRefresher({
      config: running(),
      clock: systemClock,
      applyNodeConfig,
      waitMs: 10_000,
    });
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

  it("resolves a candidate's relative paths like the running config's, wherever the candidate is staged", async () => {
    const { refresher } = setup();
    expect((await refresher.refresh('dry-run', yaml(), CONFIG_PATH)).reports).toEqual([]);
    expect((await refresher.refresh('dry-run', yaml(), '')).reports).toEqual([]);
    const elsewhere = await refresher.refresh('dry-run', yaml(), '/srv/other/edge.yaml');
    expect(elsewhere).toMatchObject({ status: 'applied', reports: [] });
    // An actual data_dir change is still seen, resolved against the running config's directory.
    const moved = await refresher.refresh('dry-run', yaml({ dataDir: 'data2' }), '/srv/other/edge.yaml');
    expect(moved.status).toBe('restart_required');
    expect(moved.reports.map((report) => report.path)).toEqual(['edge.data_dir']);
    // Without a running config path, the candidate's own directory is used.
    const bare = createConfigRefresher({ config: running(), clock: systemClock });
    const staged = await bare.refresh('dry-run', yaml(), '/srv/other/edge.yaml');
    expect(staged.reports.map((report) => report.path).sort()).toEqual([
      'bootstrap.artifact_dir',
      'edge.data_dir',
    ]);
  });

  it('a routing swap that throws is a rejected result with a report; the nodes are reverted', async () => {
    const applyNodeConfig = fakeApplier([{ node_id: 'a', status: 'applied', revision: 'r', error: '' }]);
    const refresher = createConfigRefresher({
      clock: systemClock,
      config: running(),
      configPath: CONFIG_PATH,
      applyNodeConfig,
      routing: {
        applyConfig: () => {
          throw new Error('pool exploded');
        },
      },
    });
    const before = refresher.current();
    const result = await refresher.refresh('apply', yaml({ capacity: 2 }), CONFIG_PATH);
    expect(result.status).toBe('rejected');
    expect(result.reports.at(-1)).toMatchObject({ path: '', class: 'invalid' });
    expect(result.reports.at(-1)?.reason).toMatch(/^\(edge\): .*pool exploded.*nothing was applied$/);
    expect(refresher.current()).toBe(before);
    expect(refresher.applied).toBe(0);
    // The gate is free again.
    expect((await refresher.refresh('dry-run', yaml(), CONFIG_PATH)).status).toBe('applied');
  });

  it('an unexpected failure inside the edge is a rejected result, not a thrown error', async () => {
    const refresher = createConfigRefresher({
      clock: systemClock,
      config: running(),
      configPath: CONFIG_PATH,
      applyNodeConfig: () => Promise.reject(new Error('registry bug')),
    });
    const before = refresher.current();
    const result = await refresher.refresh('apply', yaml({ capacity: 2 }), CONFIG_PATH);
    expect(result.status).toBe('rejected');
    expect(result.reports.at(-1)).toEqual({
      path: '',
      change: 'modified',
      class: 'invalid',
      reason: '(edge): the edge failed while handling the refresh: registry bug; nothing was applied',
    });
    expect(refresher.current()).toBe(before);
  });
});
