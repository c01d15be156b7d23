// Live config refresh end to end in one process: a real edge runtime (transport, OpenAI surface, refresh, admin
// gRPC) with scripted fake nodes over loopback. Each live-apply field is changed through the admin API while the
// edge serves, and the change is observed in dispatch (which provider runs a request, how many run at once, how
// the queue behaves), in provider status and in what the nodes receive.
import { describe, it, expect, afterEach } from '@jest/globals';
import {
  poolIdle,
  startRefreshHarness,
  waitUntil,
  type ConfigSpec,
  type ProviderSpec,
  type RefreshHarness,
} from './refresh-harness.js';

let harness: RefreshHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function oneNode(dataDir: string, providers: ProviderSpec[], models?: ConfigSpec['models']): ConfigSpec {
  return {
    dataDir,
    nodes: [{ id: 'n1', providers }],
    models: models ?? [
      { id: 'm', providers: Object.fromEntries(providers.map((provider) => [provider.id, provider.served])) },
    ],
  };
}

function provider(id: string, overrides: Partial<ProviderSpec> = {}): ProviderSpec {
  return { id, served: `served-${id}`, capacity: 1, max_queue: 4, queue_timeout_ms: 10_000, ...overrides };
}

describe('live config refresh: provider capacity', () => {
  it('capacity 1 → 2 lets a queued second request run at once; a cut only affects new dispatches', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => (spec = oneNode(dataDir, [provider('p1')])));
    const h = harness;
    const node = h.node('n1');
    const first = h.chat('m');
    await node.waitForRuns(1);
    const second = h.chat('m');
    await waitUntil(() => h.pool.totals().queued === 1, 3000, 'second request queued');
    expect(node.runs).toHaveLength(1);

    const wider = oneNode(spec.dataDir, [provider('p1', { capacity: 2 })]);
    const result = await h.refresh('apply', wider);
    expect(result).toMatchObject({ status: 'applied', mode: 'apply', changed_providers: ['p1'] });
    expect(result.reports).toEqual([
      {
        path: 'nodes[n1].providers[p1].capacity',
        change: 'modified',
        class: 'live',
        reason: 'provider capacity is applied to the pool live',
      },
    ]);
    expect(result.node_results).toEqual([{ node_id: 'n1', status: 'applied', error: '' }]);
    // The queued request re-evaluates against the new capacity: both run at the same time now.
    await node.waitForRuns(2);
    expect(node.openRuns()).toHaveLength(2);
    expect(h.pool.snapshot()[0]).toMatchObject({ providerId: 'p1', capacity: 2, inFlight: 2, queued: 0 });
    expect(node.refreshes.at(-1)?.providers[0]?.capacity).toBe(2);

    // Cut back to 1 with two in flight: both keep running, a new request waits until in_flight < 1.
    expect((await h.refresh('apply', oneNode(spec.dataDir, [provider('p1')]))).status).toBe('applied');
    const third = h.chat('m');
    await waitUntil(() => h.pool.totals().queued === 1, 3000, 'third request queued');
    const [runA, runB] = node.openRuns();
    await node.finish(runA);
    expect((await first).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(node.runs).toHaveLength(2);
    await node.finish(runB);
    expect((await second).status).toBe(200);
    await node.waitForRuns(3);
    await node.finish(node.openRuns()[0]);
    expect((await third).status).toBe(200);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });
});

describe('live config refresh: enabled, priority, queue', () => {
  it('enabled: false removes a provider from dispatch, shows it disabled, and lets its running work drain', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness(
      (dataDir) => (spec = oneNode(dataDir, [provider('p1'), provider('p2', { priority: 5 })])),
    );
    const h = harness;
    const node = h.node('n1');
    const running = h.chat('m');
    await node.waitForRuns(1);
    expect(node.runs[0]?.request.providerId).toBe('p1');

    const disabled = oneNode(spec.dataDir, [
      provider('p1', { enabled: false }),
      provider('p2', { priority: 5 }),
    ]);
    const result = await h.refresh('apply', disabled);
    expect(result.status).toBe('applied');
    expect(result.reports.map((report) => report.path)).toEqual(['nodes[n1].providers[p1].enabled']);
    const status = await h.admin.listProviders();
    expect(status.find((entry) => entry.providerId === 'p1')).toMatchObject({
      status: 'disabled',
      health: 'disabled',
      capacity: 0,
      inFlight: 1,
    });
    // New work goes to p2 only, even though p1 has the better priority once its run ends.
    const next = h.chat('m');
    await node.waitForRuns(2);
    expect(node.runs[1]?.request.providerId).toBe('p2');
    await node.finish(node.runs[0]);
    expect((await running).status).toBe(200);
    await node.finish(node.runs[1]);
    expect((await next).headers.get('x-iop-provider')).toBe('p2');
    const after = h.chat('m');
    await node.waitForRuns(3);
    expect(node.runs[2]?.request.providerId).toBe('p2');
    await node.finish(node.runs[2]);
    expect((await after).status).toBe(200);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });

  it('priority flips which idle provider gets the next request', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness(
      (dataDir) => (spec = oneNode(dataDir, [provider('p1'), provider('p2', { priority: 5 })])),
    );
    const h = harness;
    const node = h.node('n1');
    let conversation = 0;
    const served = async (): Promise<string | null> => {
      // A new conversation each time: one conversation would stay on its provider (affinity).
      conversation += 1;
      const response = h.chat('m', { messages: [{ role: 'user', content: `hi (${conversation})` }] });
      await node.waitForRuns(node.runs.length + 1);
      await node.finish(node.openRuns()[0]);
      return (await response).headers.get('x-iop-provider');
    };
    expect(await served()).toBe('p1');
    expect(await served()).toBe('p1');
    const flipped = oneNode(spec.dataDir, [
      provider('p1', { priority: 10 }),
      provider('p2', { priority: 5 }),
    ]);
    const result = await h.refresh('apply', flipped);
    expect(result.reports.map((report) => report.path)).toEqual(['nodes[n1].providers[p1].priority']);
    // priority is pool-only: the node's payload does not change, so no node is sent anything.
    expect(result.node_results).toEqual([]);
    expect(node.refreshes).toHaveLength(0);
    expect(await served()).toBe('p2');
    expect(await served()).toBe('p2');
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });

  it('max_queue and queue_timeout_ms change how a busy model queues', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness(
      (dataDir) => (spec = oneNode(dataDir, [provider('p1', { max_queue: 0 })])),
    );
    const h = harness;
    const node = h.node('n1');
    const first = h.chat('m');
    await node.waitForRuns(1);
    // max_queue 0: no queueing, a second request is refused at once.
    expect((await h.chat('m')).status).toBe(429);

    const queueing = oneNode(spec.dataDir, [provider('p1', { max_queue: 1, queue_timeout_ms: 300 })]);
    const result = await h.refresh('apply', queueing);
    expect(result.reports.map((report) => report.path).sort()).toEqual([
      'nodes[n1].providers[p1].max_queue',
      'nodes[n1].providers[p1].queue_timeout_ms',
    ]);
    const started = Date.now();
    const queued = h.chat('m');
    await waitUntil(() => h.pool.totals().queued === 1, 3000, 'request queued');
    expect((await h.chat('m')).status).toBe(429);
    const timedOut = await queued;
    expect(timedOut.status).toBe(503);
    expect(((await timedOut.json()) as { error: { code: string } }).error.code).toBe('queue_timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(3000);
    await node.finish(node.runs[0]);
    expect((await first).status).toBe(200);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });
});

describe('live config refresh: models', () => {
  it('a provider mapping change, a new model and a generation policy change apply to the next request', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness(
      (dataDir) =>
        (spec = oneNode(
          dataDir,
          [provider('p1'), provider('p2')],
          [{ id: 'm', providers: { p1: 'served-p1' }, default_max_tokens: 100 }],
        )),
    );
    const h = harness;
    const node = h.node('n1');
    const first = h.chat('m');
    await node.waitForRuns(1);
    expect(node.runs[0]?.request).toMatchObject({ providerId: 'p1', target: 'served-p1' });
    expect(node.runs[0]?.request.params?.maxTokens).toBe(100);
    await node.finish(node.runs[0]);
    await first;

    const remapped = oneNode(
      spec.dataDir,
      [provider('p1'), provider('p2')],
      [
        { id: 'm', providers: { p2: 'served-p2' }, default_max_tokens: 256, min_max_tokens: 64 },
        { id: 'm2', providers: { p1: 'served-p1' } },
      ],
    );
    const dry = await h.refresh('dry-run', remapped);
    expect(dry).toMatchObject({ status: 'applied', mode: 'dry-run', changed_models: ['m', 'm2'] });
    expect(dry.node_results).toEqual([]);
    // A dry-run changes nothing.
    const models = async () =>
      ((await (await fetch(`${h.openaiUrl}/v1/models`)).json()) as { data: { id: string }[] }).data.map(
        (model) => model.id,
      );
    expect(await models()).toEqual(['m']);

    const result = await h.refresh('apply', remapped);
    expect(result.status).toBe('applied');
    expect(result.reports.map((report) => report.path)).toEqual([
      'models[m].providers.p1',
      'models[m].providers.p2',
      'models[m].default_max_tokens',
      'models[m].min_max_tokens',
      'models[m2]',
    ]);
    expect(await models()).toEqual(['m', 'm2']);
    const second = h.chat('m', { max_tokens: 10 });
    await node.waitForRuns(2);
    expect(node.runs[1]?.request).toMatchObject({ providerId: 'p2', target: 'served-p2' });
    expect(node.runs[1]?.request.params?.maxTokens).toBe(64);
    await node.finish(node.runs[1]);
    expect((await second).status).toBe(200);
    const third = h.chat('m2');
    await node.waitForRuns(3);
    expect(node.runs[2]?.request).toMatchObject({ providerId: 'p1', target: 'served-p1' });
    await node.finish(node.runs[2]);
    expect((await third).status).toBe(200);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });
});

describe('live config refresh: queued requests', () => {
  it('a request queued before the refresh runs with the new mapping and generation policy', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness(
      (dataDir) =>
        (spec = oneNode(
          dataDir,
          [provider('p1'), provider('p2')],
          [{ id: 'm', providers: { p1: 'served-p1' }, default_max_tokens: 100 }],
        )),
    );
    const h = harness;
    const node = h.node('n1');
    const first = h.chat('m');
    await node.waitForRuns(1);
    const queued = h.chat('m');
    await waitUntil(() => h.pool.totals().queued === 1, 3000, 'request queued');
    const result = await h.refresh(
      'apply',
      oneNode(
        spec.dataDir,
        [provider('p1'), provider('p2')],
        [{ id: 'm', providers: { p1: 'served-p1', p2: 'served-p2' }, default_max_tokens: 300 }],
      ),
    );
    expect(result.status).toBe('applied');
    // The waiter is re-evaluated at once: p2 is now a candidate with a free slot.
    await node.waitForRuns(2);
    expect(node.runs[1]?.request).toMatchObject({ providerId: 'p2', target: 'served-p2' });
    expect(node.runs[1]?.request.params?.maxTokens).toBe(300);
    for (const run of node.openRuns()) await node.finish(run);
    expect([(await first).status, (await queued).status]).toEqual([200, 200]);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });
});
