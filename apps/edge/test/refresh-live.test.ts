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
