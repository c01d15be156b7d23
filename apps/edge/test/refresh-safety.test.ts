// Live config refresh: what must NOT change, and what nodes see. restart_required and rejected refreshes leave
// dispatch untouched; an apply is all or nothing across the nodes (one refusing or silent node rejects it and the
// others are reverted; not connected nodes are listed); concurrent refreshes are serialized; a refresh under
// streaming load loses and leaks nothing.
import { describe, it, expect, afterEach } from '@jest/globals';
import { createAdminClient } from '../src/admin/admin-client.js';
import { systemClock } from '../src/clock.js';
import { isAdminError } from '../src/admin/errors.js';
import {
  configDocument,
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

function provider(id: string, overrides: Partial<ProviderSpec> = {}): ProviderSpec {
  return { id, served: `served-${id}`, capacity: 1, max_queue: 4, queue_timeout_ms: 10_000, ...overrides };
}

function spec(dataDir: string, providers: ProviderSpec[], extra: Partial<ConfigSpec> = {}): ConfigSpec {
  return {
    dataDir,
    nodes: [{ id: 'n1', providers }],
    models: [{ id: 'm', providers: Object.fromEntries(providers.map((entry) => [entry.id, entry.served])) }],
    ...extra,
  };
}

describe('refreshes that must not apply', () => {
  it('restart_required names each restart field and applies nothing, not even the live part', async () => {
    let base!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, [provider('p1')])));
    const h = harness;
    const node = h.node('n1');
    const candidate = spec(base.dataDir, [provider('p1', { capacity: 2 })], { heartbeatIntervalMs: 2000 });
    for (const mode of ['dry-run', 'apply']) {
      const result = await h.refresh(mode, candidate);
      expect(result.status).toBe('restart_required');
      expect(result.node_results).toEqual([]);
      expect(result.reports).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ path: 'edge.heartbeat_interval_ms', class: 'restart' }),
          expect.objectContaining({ path: 'nodes[n1].providers[p1].capacity', class: 'live' }),
        ]),
      );
    }
    // Behaviour unchanged: capacity is still 1, so a second request queues; the node was sent nothing.
    const first = h.chat('m');
    await node.waitForRuns(1);
    const second = h.chat('m');
    await waitUntil(() => h.pool.totals().queued === 1, 3000, 'second request queued');
    expect(node.runs).toHaveLength(1);
    expect(node.refreshes).toHaveLength(0);
    expect(h.refresher.applied).toBe(0);
    expect(h.refresher.current().edge.heartbeat_interval_ms).toBe(1000);
    await node.finish(node.runs[0]);
    await node.waitForRuns(2);
    await node.finish(node.runs[1]);
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
    await waitUntil(() => poolIdle(h.pool), 2000, 'pool idle');
  });

  it('rejected reports every validation error with its path and leaves the running state untouched', async () => {
    let base!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, [provider('p1')])));
    const h = harness;
    const document = configDocument(spec(base.dataDir, [provider('p1', { capacity: 0, priority: -1 })]));
    const result = await h.refresh('apply', JSON.stringify(document, null, 2));
    expect(result.status).toBe('rejected');
    expect(result).toMatchObject({
      changed_nodes: [],
      changed_providers: [],
      changed_models: [],
      node_results: [],
    });
    expect(result.reports.map((report) => [report.path, report.class])).toEqual([
      ['nodes[0].providers[0].capacity', 'invalid'],
      ['nodes[0].providers[0].priority', 'invalid'],
    ]);
    expect(result.reports[0]?.reason).toMatch(/^nodes\[0\]\.providers\[0\]\.capacity \(line \d+\): /);

    const broken = await h.refresh('apply', 'nodes: [unclosed');
    expect(broken.status).toBe('rejected');
    expect(broken.reports[0]?.class).toBe('invalid');

    const badMode = await h.refresh('yolo', spec(base.dataDir, [provider('p1', { capacity: 2 })]));
    expect(badMode).toMatchObject({ status: 'rejected', mode: 'yolo' });
    expect(badMode.reports).toEqual([expect.objectContaining({ path: 'mode', class: 'invalid' })]);

    expect(h.refresher.applied).toBe(0);
    expect(h.pool.snapshot()[0]).toMatchObject({ capacity: 1, priority: 0 });
    expect(h.node('n1').refreshes).toHaveLength(0);
  });

  it('with refresh.enabled false the admin API answers that refresh is disabled', async () => {
    harness = await startRefreshHarness((dataDir) => spec(dataDir, [provider('p1')]), {
      refreshEnabled: false,
    });
    const h = harness;
    const error = await h.refresh('dry-run', 'x: 1').catch((caught: unknown) => caught);
    expect(isAdminError(error) && error.message).toBe('config refresh is disabled');
  });
});

describe('admin API guard', () => {
  it('refuses a non-loopback refresh.listen without admin_token; with one, RefreshConfig needs the token', async () => {
    await expect(
      startRefreshHarness((dataDir) => spec(dataDir, [provider('p1')]), { refreshListen: '0.0.0.0:0' }),
    ).rejects.toMatchObject({ code: 'insecure_listen' });

    let base!: ConfigSpec;
    const options = { refreshListen: '0.0.0.0:0', adminToken: 'admin-secret', connect: [] };
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, [provider('p1')])), {
      ...options,
      clientToken: 'wrong',
    });
    const candidate = {
      ...base,
      ...options,
      tls: harness.tls,
      nodes: [{ id: 'n1', providers: [provider('p1', { capacity: 2 })] }],
    };
    const refused = await harness.refresh('apply', candidate).catch((caught: unknown) => caught);
    expect(isAdminError(refused) && refused.code).toBe('unauthenticated');
    expect(harness.pool.snapshot()[0]?.capacity).toBe(1);
    // The admin API beyond loopback speaks TLS: a plaintext client cannot even reach it.
    expect(harness.adminTls).toBeDefined();
    const client = createAdminClient(
      {
        address: harness.adminAddress,
        token: 'admin-secret',
        tls: harness.adminTls,
      },
      systemClock,
    );
    try {
      const response = await client.refreshConfig({
        mode: 'apply',
        configYaml: JSON.stringify(configDocument(candidate)),
        configPath: harness.configPath,
      });
      expect(response.status).toBe('applied');
    } finally {
      client.close();
    }
    expect(harness.pool.snapshot()[0]?.capacity).toBe(2);
  });
});

describe('node acknowledgements', () => {
  it('one refusing and one silent node reject the apply: the others are reverted and nothing changes', async () => {
    let base!: ConfigSpec;
    const nodes = (dataDir: string, capacity: number, maxConcurrency: number): ConfigSpec => ({
      dataDir,
      nodes: ['ack', 'refuse', 'silent', 'offline', 'untouched'].map((id) => ({
        id,
        max_concurrency: id === 'untouched' ? 4 : maxConcurrency,
        providers: [provider(`${id}-p`, { capacity: id === 'untouched' ? 1 : capacity })],
      })),
      models: [{ id: 'm', providers: { 'ack-p': 'served-ack-p' } }],
    });
    harness = await startRefreshHarness((dataDir) => (base = nodes(dataDir, 1, 4)), {
      connect: ['ack', 'refuse', 'silent', 'untouched'],
      nodeTimeoutMs: 1000,
    });
    const h = harness;
    h.node('refuse').answer = 'refuse';
    h.node('silent').answer = 'ignore';
    const before = h.refresher.current();
    const ackRevision = h.runtime.registry.get('ack')?.payload.revision;
    const started = Date.now();
    const result = await h.refresh('apply', nodes(base.dataDir, 3, 8));
    // Prepare (1 s timeout) and the silent node's revert (another 1 s at most).
    expect(Date.now() - started).toBeLessThan(4000);
    expect(result.status).toBe('rejected');
    expect(result.changed_nodes).toEqual(['ack', 'offline', 'refuse', 'silent']);
    expect(result.node_results).toEqual([
      { node_id: 'ack', status: 'reverted', error: '' },
      { node_id: 'offline', status: 'not_connected', error: '' },
      { node_id: 'refuse', status: 'failed', error: 'adapter rebuild failed' },
      {
        node_id: 'silent',
        status: 'timeout',
        error: expect.stringMatching(
          /timed out after 1000 ms; its previous payload was sent again/,
        ) as unknown as string,
      },
    ]);
    expect(
      result.reports.filter((report) => report.class === 'invalid').map((report) => report.path),
    ).toEqual(['nodes[refuse]', 'nodes[silent]']);
    // 'ack' applied the new payload, then got its previous one back.
    const received = h.node('ack').refreshes;
    expect(received.map((payload) => payload.maxConcurrency)).toEqual([8, 4]);
    expect(received[0]?.providers[0]).toMatchObject({ id: 'ack-p', capacity: 3 });
    expect(received[1]?.revision).toBe(ackRevision);
    expect(h.node('untouched').refreshes).toHaveLength(0);
    // Nothing changed on the edge: config, pool capacity, the payload recorded for 'ack', later registrations.
    expect(h.refresher.current()).toBe(before);
    expect(h.pool.snapshot().find((entry) => entry.providerId === 'ack-p')?.capacity).toBe(1);
    expect(h.runtime.registry.get('ack')?.payload.revision).toBe(ackRevision);
    const late = await h.connect('offline');
    expect(late.payload).toMatchObject({ maxConcurrency: 4 });
    expect(late.payload?.providers[0]?.capacity).toBe(1);

    // With every connected node acknowledging, the same refresh applies everywhere.
    h.node('refuse').answer = 'ack';
    h.node('silent').answer = 'ack';
    const applied = await h.refresh('apply', nodes(base.dataDir, 3, 8));
    expect(applied.status).toBe('applied');
    expect(applied.node_results.map((node) => [node.node_id, node.status])).toEqual([
      ['ack', 'applied'],
      ['offline', 'applied'],
      ['refuse', 'applied'],
      ['silent', 'applied'],
    ]);
    expect(h.pool.snapshot().find((entry) => entry.providerId === 'ack-p')?.capacity).toBe(3);
    expect(h.refresher.current().nodes[0]?.runtime.max_concurrency).toBe(8);
  });
});

describe('node lost during the push', () => {
  it('a node that disconnects before acknowledging is listed not_connected and gets the payload on return', async () => {
    let base!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, [provider('p1')])), {
      nodeTimeoutMs: 5000,
    });
    const h = harness;
    const node = h.node('n1');
    node.answer = 'ignore';
    const pending = h.refresh('apply', spec(base.dataDir, [provider('p1', { capacity: 2 })]));
    await waitUntil(() => node.refreshes.length === 1, 3000, 'push sent');
    const started = Date.now();
    node.fake.kill();
    const result = await pending;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result.node_results).toEqual([
      {
        node_id: 'n1',
        status: 'not_connected',
        error: expect.stringMatching(/disconnected/) as unknown as string,
      },
    ]);
    await waitUntil(() => h.runtime.registry.get('n1') === undefined, 3000, 'node gone');
    const back = await h.connect('n1');
    expect(back.payload?.providers[0]?.capacity).toBe(2);
  });
});

describe('serialization', () => {
  it('a refresh during another waits for it; past the wait bound it fails clearly', async () => {
    let base!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, [provider('p1')])), {
      waitMs: 800,
    });
    const h = harness;
    const node = h.node('n1');
    node.ackDelayMs = 100;
    const order: string[] = [];
    const first = h.refresh('apply', spec(base.dataDir, [provider('p1', { capacity: 2 })])).then((result) => {
      order.push(`first:${result.node_results[0]?.status}`);
      return result;
    });
    await waitUntil(() => node.refreshes.length === 1, 3000, 'first push');
    const second = h
      .refresh('apply', spec(base.dataDir, [provider('p1', { capacity: 3 })]))
      .then((result) => {
        order.push(`second:${node.refreshes.length}`);
        return result;
      });
    await Promise.all([first, second]);
    // The second refresh ran only after the first had collected its acknowledgement.
    expect(order).toEqual(['first:applied', 'second:2']);
    expect(node.refreshes.map((payload) => payload.providers[0]?.capacity)).toEqual([2, 3]);
    expect(h.pool.snapshot()[0]?.capacity).toBe(3);

    node.ackDelayMs = 1500;
    const slow = h.refresh('apply', spec(base.dataDir, [provider('p1', { capacity: 4 })]));
    await waitUntil(() => node.refreshes.length === 3, 3000, 'slow push');
    const busy = await h
      .refresh('apply', spec(base.dataDir, [provider('p1', { capacity: 5 })]))
      .catch((caught: unknown) => caught);
    expect(isAdminError(busy) && busy.serviceCode).toBe('refresh_busy');
    expect(isAdminError(busy) && busy.message).toMatch(/another config refresh is still running/);
    expect((await slow).status).toBe('applied');
    expect(h.pool.snapshot()[0]?.capacity).toBe(4);
  });
});

describe('refresh under load', () => {
  it('streaming requests across repeated applies all complete; nothing leaks', async () => {
    let base!: ConfigSpec;
    const providers = (capacity: number, disabled: boolean): ProviderSpec[] => [
      provider('p1', { capacity, max_queue: 64, enabled: !disabled }),
      provider('p2', { capacity: 2, max_queue: 64, priority: 3 }),
    ];
    harness = await startRefreshHarness((dataDir) => (base = spec(dataDir, providers(2, false))));
    const h = harness;
    const node = h.node('n1');
    // Every run streams 5 deltas 5 ms apart as soon as the node gets it.
    let served = 0;
    const serve = setInterval(() => {
      for (const run of node.openRuns()) {
        served += 1;
        void node.finish(run, 'x', { deltas: 5, gapMs: 5 }).catch(() => undefined);
      }
    }, 5);
    try {
      const requests = Array.from({ length: 30 }, () => h.streamChat('m'));
      const shapes: [number, boolean][] = [
        [1, false],
        [4, false],
        [3, true],
        [1, false],
        [2, false],
      ];
      const results = [];
      let busiest = 0;
      for (const [capacity, disabled] of shapes) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const totals = h.pool.totals();
        busiest = Math.max(busiest, totals.inFlight + totals.queued);
        results.push(await h.refresh('apply', spec(base.dataDir, providers(capacity, disabled))));
      }
      expect(results.map((result) => result.status)).toEqual(Array(shapes.length).fill('applied'));
      // The applies really happened under load (runs in flight and requests queued).
      expect(busiest).toBeGreaterThanOrEqual(3);
      const outcomes = await Promise.all(requests);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(30).fill(200));
      expect(outcomes.map((outcome) => outcome.text)).toEqual(Array(30).fill('xxxxx'));
      expect(served).toBe(30);
      await waitUntil(() => poolIdle(h.pool), 3000, 'pool idle');
      expect(h.runtime.registry.get('n1')?.inFlightRuns).toBe(0);
      expect(h.pool.snapshot().map((entry) => [entry.providerId, entry.inFlight, entry.queued])).toEqual([
        ['p1', 0, 0],
        ['p2', 0, 0],
      ]);
    } finally {
      clearInterval(serve);
    }
  });
});
