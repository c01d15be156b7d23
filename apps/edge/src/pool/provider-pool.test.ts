import { afterEach, describe, expect, it } from '@jest/globals';
import { createEventBus } from '../events/event-bus.js';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import { CircuitBreaker } from './circuit-breaker.js';
import type { EventBus, SubscribeOptions } from '../events/types.js';
import { PoolError } from './errors.js';
import { createProviderPool, type Lease, type ProviderPool, type PoolConfig } from './provider-pool.js';
import {
  connectAll,
  FakeNodes,
  modelConfig,
  nodeConfig,
  poolConfig,
  providerConfig,
} from './test-support/pool-fixture.js';

const pools: ProviderPool[] = [];

function makePool(
  config: PoolConfig,
  nodes = new FakeNodes(),
  extra: { pollIntervalMs?: number; onColdLoad?: (providerId: string) => void } = {},
) {
  connectAll(nodes, config);
  const pool = createProviderPool({
    config,
    nodes,
    pollIntervalMs: extra.pollIntervalMs ?? 1000,
    ...(extra.onColdLoad ? { onColdLoad: extra.onColdLoad } : {}),
  });
  pools.push(pool);
  return { pool, nodes };
}

function expectIdle(pool: ProviderPool): void {
  expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  for (const status of pool.snapshot()) {
    expect(status.inFlight).toBe(0);
    expect(status.queued).toBe(0);
  }
}

async function rejection(promise: Promise<unknown>): Promise<PoolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PoolError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  for (const pool of pools.splice(0)) pool.close();
});

describe('dispatch order', () => {
  it('picks the lowest in_flight, then the lower priority number', async () => {
    const config = poolConfig([
      providerConfig('a', { capacity: 3, priority: 2 }),
      providerConfig('b', { capacity: 3, priority: 1 }),
      providerConfig('c', { capacity: 3, priority: 3 }),
    ]);
    const { pool } = makePool(config);
    const picks: Lease[] = [];
    for (let index = 0; index < 6; index += 1) picks.push(await pool.acquire('m'));
    // in_flight 0,0,0 → b (priority 1); then a,c at 0 → a (2); then c; then all at 1 → b, a, c.
    expect(picks.map((lease) => lease.providerId)).toEqual(['b', 'a', 'c', 'b', 'a', 'c']);
    expect(picks[0]).toMatchObject({
      nodeId: 'node-b',
      adapter: 'openai_compat',
      target: 'served-b',
      model: 'm',
    });
    // Freeing c makes it the least loaded provider, whatever its priority.
    picks[2]?.release();
    expect((await pool.acquire('m')).providerId).toBe('c');
  });

  it('prefers, among equal in_flight, a provider whose node reports the served model resident, before priority', async () => {
    const config = poolConfig([
      providerConfig('a', { capacity: 2, priority: 1 }),
      providerConfig('b', { capacity: 2, priority: 2 }),
      providerConfig('c', { capacity: 2, priority: 3 }),
    ]);
    const cold: string[] = [];
    const { pool, nodes } = makePool(config, new FakeNodes(), { onColdLoad: (id) => cold.push(id) });
    // a: the model not loaded; b: loaded (tag-less served name = `:latest`); c: never reported (unknown).
    nodes.setResident('node-a', 'a', { models: ['other:7b'], state: 'fresh' });
    nodes.setResident('node-b', 'b', { models: ['served-b:latest'], state: 'fresh' });
    const first = await pool.acquire('m');
    expect(first.providerId).toBe('b');
    expect(cold).toEqual([]);
    // b is busier now: the lowest in_flight still comes first; a and c tie (not loaded = unknown), priority a.
    const second = await pool.acquire('m');
    expect(second.providerId).toBe('a');
    expect(cold).toEqual(['a']);
    // c (unknown) is never a cold load.
    const third = await pool.acquire('m');
    expect(third.providerId).toBe('c');
    expect(cold).toEqual(['a']);
    for (const lease of [first, second, third]) lease.release();
    // Every one free again; with b's list stale, nobody is preferred: priority picks a (a cold load again).
    nodes.setResident('node-b', 'b', { models: ['served-b:latest'], state: 'stale' });
    const stale = await pool.acquire('m');
    expect(stale.providerId).toBe('a');
    expect(cold).toEqual(['a', 'a']);
    stale.release();
    // a now reports it loaded too: a and b both resident → priority a; b's fresh again, b only once a is busy.
    nodes.setResident('node-a', 'a', { models: ['served-a'], state: 'fresh' });
    nodes.setResident('node-b', 'b', { models: ['served-b:latest'], state: 'fresh' });
    const both = [await pool.acquire('m'), await pool.acquire('m')];
    expect(both.map((lease) => lease.providerId)).toEqual(['a', 'b']);
    for (const lease of both) lease.release();
    expect(cold).toEqual(['a', 'a']);
    expectIdle(pool);
  });

  it('shows each provider served models resident and how far that is known in the snapshot', () => {
    const config = poolConfig([providerConfig('a'), providerConfig('b'), providerConfig('c')]);
    const { pool, nodes } = makePool(config);
    nodes.setResident('node-a', 'a', { models: ['served-a:latest', 'unrelated'], state: 'fresh' });
    nodes.setResident('node-b', 'b', { models: ['served-b'], state: 'stale' });
    expect(
      pool.snapshot().map((status) => [status.providerId, status.residentModels, status.residentState]),
    ).toEqual([
      ['a', ['served-a'], 'fresh'],
      ['b', ['served-b'], 'stale'],
      ['c', [], 'unknown'],
    ]);
  });

  it('rotates round-robin among equal in_flight and priority, across config refreshes and reconnects', async () => {
    const providers = [providerConfig('a'), providerConfig('b'), providerConfig('c')];
    const config = poolConfig(providers);
    const { pool, nodes } = makePool(config);
    const order: string[] = [];
    const take = async () => {
      const lease = await pool.acquire('m');
      order.push(lease.providerId ?? '');
      lease.release();
    };
    await take();
    await take();
    pool.applyConfig(poolConfig(providers.map((provider) => ({ ...provider, capacity: 2 }))));
    await take();
    nodes.disconnect('node-a');
    nodes.connect('node-a');
    await take();
    await take();
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b']);
    expectIdle(pool);
  });

  it('skips disabled, offline, unhealthy and unreachable providers', async () => {
    const config = poolConfig([
      providerConfig('off', { enabled: false }),
      providerConfig('gone'),
      providerConfig('sick'),
      providerConfig('lost'),
      providerConfig('ok'),
    ]);
    const { pool, nodes } = makePool(config);
    nodes.disconnect('node-gone');
    nodes.setHealth('node-sick', 'sick', 'unhealthy');
    nodes.setHealth('node-lost', 'lost', 'unreachable');
    nodes.setHealth('node-ok', 'ok', 'healthy');
    const lease = await pool.acquire('m');
    expect(lease.providerId).toBe('ok');
    const statuses = Object.fromEntries(pool.snapshot().map((status) => [status.providerId, status]));
    expect(statuses['off']).toMatchObject({
      status: 'disabled',
      health: 'disabled',
      capacity: 0,
      inFlight: 0,
    });
    expect(statuses['gone']).toMatchObject({ status: 'offline', health: 'unknown', capacity: 1 });
    expect(statuses['sick']).toMatchObject({ status: 'ready', health: 'unhealthy' });
    expect(statuses['ok']).toMatchObject({
      status: 'ready',
      health: 'healthy',
      capacity: 1,
      inFlight: 1,
      servedModels: ['served-ok'],
      priority: 0,
      nodeId: 'node-ok',
    });
    lease.release();
    expectIdle(pool);
  });

  it('rejects unknown models and models without any available provider', async () => {
    const { pool, nodes } = makePool(poolConfig([providerConfig('a')]));
    expect((await rejection(pool.acquire('nope'))).code).toBe('model_not_found');
    nodes.disconnect('node-a');
    const error = await rejection(pool.acquire('m'));
    expect(error.code).toBe('no_provider_available');
    expectIdle(pool);
  });
});

describe('affinity policy', () => {
  it('is offered only where affinity can choose: enabled, and two or more providers mapped', () => {
    const two = poolConfig([providerConfig('a'), providerConfig('b')]);
    const config: PoolConfig = {
      nodes: two.nodes,
      models: [
        ...two.models,
        modelConfig('one', { a: 'served-a' }),
        modelConfig(
          'off',
          { a: 'served-a', b: 'served-b' },
          {
            affinity: { enabled: false, hash_messages: true, max_wait_ms: 0 },
          },
        ),
        // A provider on another edge counts: the fabric has a choice even when this edge has one provider.
        modelConfig('fabric', { a: 'served-a', elsewhere: 'served-x' }),
      ],
    };
    const { pool } = makePool(config);
    expect(pool.modelPolicy('m')?.affinity).toEqual({ enabled: true, hash_messages: true, max_wait_ms: 0 });
    expect(pool.modelPolicy('fabric')?.affinity).toBeDefined();
    expect(pool.modelPolicy('one')?.affinity).toBeUndefined();
    expect(pool.modelPolicy('off')?.affinity).toBeUndefined();
    expect(pool.modelPolicy('unknown')?.affinity).toBeUndefined();
    pool.applyConfig({ ...config, models: [modelConfig('m', { a: 'served-a' })] });
    expect(pool.modelPolicy('m')?.affinity).toBeUndefined();
  });
});

describe('capacity guard', () => {
  it('never exceeds capacity under 200 concurrent requests and returns every counter to zero', async () => {
    const config = poolConfig([
      providerConfig('a', { capacity: 3, max_queue: 100, queue_timeout_ms: 10000 }),
      providerConfig('b', { capacity: 2, max_queue: 100, queue_timeout_ms: 10000, priority: 1 }),
      providerConfig('c', { capacity: 1, max_queue: 100, queue_timeout_ms: 10000, priority: 2 }),
    ]);
    const { pool } = makePool(config);
    const capacity: Record<string, number> = { a: 3, b: 2, c: 1 };
    const running: Record<string, number> = { a: 0, b: 0, c: 0 };
    let violations = 0;
    let peakTotal = 0;
    const used = new Set<string>();
    const controller = new AbortController();
    const requests = Array.from({ length: 200 }, async (_, index) => {
      // Every tenth caller gives up while queued; the rest run for a random short time.
      const signal = index % 10 === 9 ? AbortSignal.timeout(5) : controller.signal;
      let lease: Lease;
      try {
        lease = await pool.acquire('m', { signal });
      } catch (error) {
        if (error instanceof PoolError && error.code === 'aborted') return 'aborted';
        throw error;
      }
      const providerId = lease.providerId ?? '';
      used.add(providerId);
      running[providerId] = (running[providerId] ?? 0) + 1;
      if ((running[providerId] ?? 0) > (capacity[providerId] ?? 0)) violations += 1;
      peakTotal = Math.max(
        peakTotal,
        Object.values(running).reduce((sum, value) => sum + value, 0),
      );
      await delay(index % 3);
      running[providerId] = (running[providerId] ?? 0) - 1;
      lease.release();
      lease.release();
      return 'ok';
    });
    const outcomes = await Promise.all(requests);
    expect(violations).toBe(0);
    expect(peakTotal).toBe(6);
    expect(used).toEqual(new Set(['a', 'b', 'c']));
    expect(outcomes.filter((outcome) => outcome === 'ok').length).toBeGreaterThanOrEqual(180);
    expectIdle(pool);
  });

  it('counts a lease once however often it is released', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a', { capacity: 2 })]));
    const first = await pool.acquire('m');
    const second = await pool.acquire('m');
    first.release();
    first.release();
    first.release();
    expect(pool.totals().inFlight).toBe(1);
    second.release();
    expectIdle(pool);
  });
});

describe('queue', () => {
  it('serves waiters in FIFO order as slots free up', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a', { capacity: 1, max_queue: 5 })]));
    const holder = await pool.acquire('m');
    const served: number[] = [];
    const waiters = [1, 2, 3].map((index) =>
      pool.acquire('m').then((lease) => {
        served.push(index);
        return lease;
      }),
    );
    expect(pool.totals().queued).toBe(3);
    expect(pool.snapshot()[0]?.queued).toBe(3);
    holder.release();
    const first = await waiters[0];
    first?.release();
    const second = await waiters[1];
    second?.release();
    const third = await waiters[2];
    third?.release();
    expect(served).toEqual([1, 2, 3]);
    expectIdle(pool);
  });

  it('answers queue_full at once when max_queue callers already wait', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a', { capacity: 1, max_queue: 2 })]));
    const holder = await pool.acquire('m');
    const waiting = [pool.acquire('m'), pool.acquire('m')];
    const error = await rejection(pool.acquire('m'));
    expect(error.code).toBe('queue_full');
    expect(error.details.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    holder.release();
    for (const waiter of waiting) (await waiter).release();
    expectIdle(pool);
  });

  it('sums max_queue over the model providers and rejects with max_queue 0', async () => {
    const { pool } = makePool(
      poolConfig([providerConfig('a', { max_queue: 1 }), providerConfig('b', { max_queue: 0 })]),
    );
    const leases = [await pool.acquire('m'), await pool.acquire('m')];
    const queued = pool.acquire('m');
    expect((await rejection(pool.acquire('m'))).code).toBe('queue_full');
    leases[0]?.release();
    (await queued).release();
    leases[1]?.release();
    expectIdle(pool);

    const { pool: strict } = makePool(poolConfig([providerConfig('z', { max_queue: 0 })]));
    const only = await strict.acquire('m');
    expect((await rejection(strict.acquire('m'))).code).toBe('queue_full');
    only.release();
    expectIdle(strict);
  });

  it('gives up with queue_timeout after queue_timeout_ms', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a', { capacity: 1, queue_timeout_ms: 40 })]));
    const holder = await pool.acquire('m');
    const started = Date.now();
    const error = await rejection(pool.acquire('m'));
    expect(error.code).toBe('queue_timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect(pool.totals().queued).toBe(0);
    holder.release();
    expectIdle(pool);
  });

  it('removes a waiter whose signal aborts, and the next one gets the slot', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a', { capacity: 1 })]));
    const holder = await pool.acquire('m');
    const controller = new AbortController();
    const leaving = pool.acquire('m', { signal: controller.signal });
    const staying = pool.acquire('m');
    controller.abort(new Error('client went away'));
    expect((await rejection(leaving)).code).toBe('aborted');
    expect(pool.totals().queued).toBe(1);
    holder.release();
    (await staying).release();
    expectIdle(pool);
  });

  it('rejects an already aborted signal without queueing', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a')]));
    expect((await rejection(pool.acquire('m', { signal: AbortSignal.abort() }))).code).toBe('aborted');
    expectIdle(pool);
  });

  it('rejects every waiter with shutting_down on close', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a')]));
    const holder = await pool.acquire('m');
    const waiter = pool.acquire('m');
    pool.close();
    expect((await rejection(waiter)).code).toBe('shutting_down');
    holder.release();
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });
});

describe('live config and node changes', () => {
  it('a capacity raise lets a waiter through at once; a cut only affects new dispatches', async () => {
    const provider = providerConfig('a', { capacity: 1 });
    const { pool } = makePool(poolConfig([provider]));
    const first = await pool.acquire('m');
    const waiter = pool.acquire('m');
    pool.applyConfig(poolConfig([{ ...provider, capacity: 2 }]));
    const second = await waiter;
    pool.applyConfig(poolConfig([{ ...provider, capacity: 1 }]));
    expect(pool.snapshot()[0]).toMatchObject({ capacity: 1, inFlight: 2 });
    const third = pool.acquire('m');
    first.release();
    expect(pool.totals()).toEqual({ inFlight: 1, queued: 1 });
    second.release();
    (await third).release();
    expectIdle(pool);
  });

  it('a disabled provider takes no new work and drains its running leases', async () => {
    const a = providerConfig('a', { capacity: 1 });
    const b = providerConfig('b', { capacity: 1, priority: 1 });
    const { pool } = makePool(poolConfig([a, b]));
    const onA = await pool.acquire('m');
    expect(onA.providerId).toBe('a');
    pool.applyConfig(poolConfig([{ ...a, enabled: false }, b]));
    const next = await pool.acquire('m');
    expect(next.providerId).toBe('b');
    onA.release();
    const status = pool.snapshot().find((entry) => entry.providerId === 'a');
    expect(status).toMatchObject({ status: 'disabled', health: 'disabled', capacity: 0, inFlight: 0 });
    const waiter = pool.acquire('m');
    next.release();
    const later = await waiter;
    expect(later.providerId).toBe('b');
    later.release();
    expectIdle(pool);
  });

  it('priority changes flip the dispatch order', async () => {
    const a = providerConfig('a', { priority: 0 });
    const b = providerConfig('b', { priority: 1 });
    const { pool } = makePool(poolConfig([a, b]));
    const first = await pool.acquire('m');
    first.release();
    pool.applyConfig(poolConfig([{ ...a, priority: 5 }, b]));
    const second = await pool.acquire('m');
    second.release();
    expect([first.providerId, second.providerId]).toEqual(['a', 'b']);
  });

  it('fails waiters of a model removed by a refresh and keeps leases of removed providers counted', async () => {
    const { pool } = makePool(poolConfig([providerConfig('a')]));
    const holder = await pool.acquire('m');
    const waiter = pool.acquire('m');
    pool.applyConfig({ models: [], nodes: [] });
    expect((await rejection(waiter)).code).toBe('model_not_found');
    expect(pool.totals().inFlight).toBe(1);
    holder.release();
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('a waiter follows node events only, not the run events of the runs in flight', async () => {
    const real = createEventBus({ replaySize: 0, queueSize: 16 });
    const asked: SubscribeOptions[] = [];
    const bus: EventBus = {
      ...real,
      get subscriberCount() {
        return real.subscriberCount;
      },
      subscribe: (options = {}) => {
        asked.push(options);
        return real.subscribe(options);
      },
    };
    const config: PoolConfig = {
      models: [modelConfig('m', { a: 'served-a' })],
      nodes: [nodeConfig('node-1', [providerConfig('a')])],
    };
    const nodes = new FakeNodes();
    nodes.connect('node-1');
    const pool = createProviderPool({ config, nodes, events: bus, pollIntervalMs: 60_000 });
    pools.push(pool);
    pool.start();
    const holder = await pool.acquire('m');
    const waiter = pool.acquire('m');
    expect(asked).toHaveLength(1);
    const filter = asked[0]?.filter;
    expect(
      filter?.({
        type: 'run',
        event: { runId: 'r', nodeId: 'node-1', seq: 1, atUnixMs: 0, part: { type: 'text-delta', text: 'x' } },
      }),
    ).toBe(false);
    expect(
      filter?.({
        type: 'node',
        event: { kind: 'connected', nodeId: 'node-2', alias: 'node-2', reason: 'registered', atUnixMs: 0 },
      }),
    ).toBe(true);
    holder.release();
    (await waiter).release();
    expectIdle(pool);
  });

  it('a waiter is served when a node connects (event bus) or a provider becomes healthy (poll)', async () => {
    const bus = createEventBus({ replaySize: 0, queueSize: 16 });
    const config: PoolConfig = {
      models: [modelConfig('m', { a: 'served-a', b: 'served-b' })],
      nodes: [nodeConfig('node-1', [providerConfig('a')]), nodeConfig('node-2', [providerConfig('b')])],
    };
    const nodes = new FakeNodes();
    nodes.connect('node-1');
    const pool = createProviderPool({ config, nodes, events: bus, pollIntervalMs: 60_000 });
    pools.push(pool);
    pool.start();
    const holder = await pool.acquire('m');
    const waiter = pool.acquire('m');
    nodes.connect('node-2');
    bus.publish({
      type: 'node',
      event: { kind: 'connected', nodeId: 'node-2', alias: 'node-2', reason: 'registered', atUnixMs: 0 },
    });
    const lease = await waiter;
    expect(lease.providerId).toBe('b');
    lease.release();
    holder.release();
    expectIdle(pool);
    expect(bus.subscriberCount).toBe(0);

    const polled = createProviderPool({ config, nodes, pollIntervalMs: 10 });
    pools.push(polled);
    nodes.setHealth('node-2', 'b', 'unhealthy');
    const busy = await polled.acquire('m');
    const queued = polled.acquire('m');
    nodes.setHealth('node-2', 'b', 'healthy');
    const healed = await queued;
    expect(healed.providerId).toBe('b');
    healed.release();
    busy.release();
    expectIdle(polled);
  });

  it('node disconnect mid-run: the lease is still released once and the provider shows offline', async () => {
    const { pool, nodes } = makePool(poolConfig([providerConfig('a', { capacity: 2 })]));
    const lease = await pool.acquire('m');
    nodes.disconnect('node-a');
    expect(pool.snapshot()[0]).toMatchObject({ status: 'offline', inFlight: 1 });
    lease.release();
    nodes.connect('node-a');
    expect(pool.snapshot()[0]).toMatchObject({ status: 'ready', inFlight: 0 });
    expectIdle(pool);
  });
});

describe('node max_concurrency as a dispatch bound', () => {
  /** Two providers of capacity 4 on one node whose max_concurrency is 4 (the 502 scenario of the seed). */
  function oneNodeTwoProviders(maxConcurrency = 4): PoolConfig {
    const node = nodeConfig('node-1', [
      providerConfig('a', { capacity: 4, max_queue: 32 }),
      providerConfig('b', { capacity: 4, max_queue: 32 }),
    ]);
    return {
      models: [modelConfig('m', { a: 'served-a', b: 'served-b' })],
      nodes: [{ ...node, runtime: { ...node.runtime, max_concurrency: maxConcurrency } }],
    };
  }

  it('never has more runs on a node than its max_concurrency; the rest wait in the FIFO queue', async () => {
    const { pool } = makePool(oneNodeTwoProviders());
    const leases = await Promise.all([1, 2, 3, 4].map(() => pool.acquire('m')));
    expect(pool.nodeLoads()).toEqual([{ nodeId: 'node-1', inFlight: 4, maxConcurrency: 4 }]);
    const waiting = [pool.acquire('m'), pool.acquire('m')];
    expect(pool.totals()).toEqual({ inFlight: 4, queued: 2 });
    // Both providers still show free capacity, but the node is full.
    expect(pool.snapshot().map((status) => status.inFlight)).toEqual([2, 2]);
    leases[0]?.release();
    const next = await waiting[0];
    expect(pool.totals()).toEqual({ inFlight: 4, queued: 1 });
    for (const lease of [...leases, next]) lease?.release();
    (await waiting[1]).release();
    expectIdle(pool);
    expect(pool.nodeLoads()[0]?.inFlight).toBe(0);
  });

  it('max_concurrency 0 means unlimited: provider capacity is the only bound', async () => {
    const { pool } = makePool(oneNodeTwoProviders(0));
    const leases = await Promise.all(Array.from({ length: 8 }, () => pool.acquire('m')));
    expect(pool.totals().inFlight).toBe(8);
    for (const lease of leases) lease.release();
    expectIdle(pool);
  });

  it('a capacity raise on the node through a refresh lets waiters through at once', async () => {
    const config = oneNodeTwoProviders(1);
    const { pool } = makePool(config);
    const first = await pool.acquire('m');
    const second = pool.acquire('m');
    expect(pool.totals().queued).toBe(1);
    pool.applyConfig(oneNodeTwoProviders(2));
    (await second).release();
    first.release();
    expectIdle(pool);
  });
});

describe('explicit routes', () => {
  function cliNode(): PoolConfig {
    const node = nodeConfig('node-1', [
      providerConfig('cli-p', {
        adapter: 'cli',
        adapter_instance: 'cli',
        models: ['fake-cli'],
        capacity: 1,
        max_queue: 2,
      }),
    ]);
    return {
      models: [modelConfig('m', { 'cli-p': 'fake-cli' })],
      nodes: [{ ...node, runtime: { ...node.runtime, max_concurrency: 2 } }],
    };
  }

  it('counts a route against the provider of that node whose adapter instance and target match', async () => {
    const { pool } = makePool(cliNode());
    const lease = await pool.acquireRoute({ nodeId: 'node-1', adapter: 'cli', target: 'fake-cli' });
    expect(lease).toMatchObject({
      providerId: 'cli-p',
      nodeId: 'node-1',
      model: undefined,
      target: 'fake-cli',
    });
    expect(pool.snapshot()[0]).toMatchObject({ providerId: 'cli-p', inFlight: 1 });
    // The model shares that provider: it now waits behind the route's run.
    const viaModel = pool.acquire('m');
    expect(pool.snapshot()[0]?.queued).toBe(1);
    lease.release();
    (await viaModel).release();
    expectIdle(pool);
  });

  it('a route no provider matches still takes a node slot, and waits when the node is full', async () => {
    const { pool } = makePool(cliNode());
    const other = await pool.acquireRoute({ nodeId: 'node-1', adapter: 'ollama', target: 'llama3' });
    expect(other.providerId).toBeUndefined();
    const second = await pool.acquireRoute({ nodeId: 'node-1', adapter: 'ollama', target: 'llama3' });
    expect(pool.nodeLoads()[0]).toMatchObject({ inFlight: 2, maxConcurrency: 2 });
    const third = pool.acquireRoute({ nodeId: 'node-1', adapter: 'ollama', target: 'llama3' });
    expect(pool.totals()).toEqual({ inFlight: 2, queued: 1 });
    other.release();
    (await third).release();
    second.release();
    expectIdle(pool);
  });

  it("counts waiters of every door against a provider's max_queue (a model queue fills it for a route)", async () => {
    const { pool } = makePool(cliNode());
    const held = await pool.acquire('m');
    const viaModel = [pool.acquire('m'), pool.acquire('m')];
    expect(
      (await rejection(pool.acquireRoute({ nodeId: 'node-1', adapter: 'cli', target: 'fake-cli' }))).code,
    ).toBe('queue_full');
    held.release();
    (await viaModel[0]).release();
    (await viaModel[1]).release();
    expectIdle(pool);
  });

  it('queue_full from the matching provider max_queue, node_unavailable for a node that is not connected', async () => {
    const { pool, nodes } = makePool(cliNode());
    const route = { nodeId: 'node-1', adapter: 'cli', target: 'fake-cli' };
    const held = await pool.acquireRoute(route);
    const queued = [pool.acquireRoute(route), pool.acquireRoute(route)];
    expect((await rejection(pool.acquireRoute(route))).code).toBe('queue_full');
    nodes.disconnect('node-2');
    expect((await rejection(pool.acquireRoute({ ...route, nodeId: 'node-2' }))).code).toBe(
      'node_unavailable',
    );
    held.release();
    (await queued[0]).release();
    (await queued[1]).release();
    expectIdle(pool);
  });
});

describe('circuit breaker and excluded providers', () => {
  function withCircuits(providers = [providerConfig('a'), providerConfig('b')]) {
    const clock = new ManualClock();
    const circuits = new CircuitBreaker({
      settings: {
        consecutive_failures: 2,
        failure_rate: 0.5,
        window_ms: 10_000,
        min_requests: 10,
        cooldown_ms: 1_000,
      },
      clock,
      logger: silentLogger,
    });
    const config = poolConfig(providers);
    const nodes = new FakeNodes();
    connectAll(nodes, config);
    const pool = createProviderPool({ config, nodes, circuits, clock, pollIntervalMs: 10 });
    pools.push(pool);
    return { pool, circuits, clock };
  }

  it('never places a run on an excluded provider; only excluded ones left means no provider', async () => {
    const { pool } = withCircuits();
    for (let index = 0; index < 3; index += 1) {
      const lease = await pool.acquire('m', { excludeProviders: new Set(['a']) });
      expect(lease.providerId).toBe('b');
      lease.release();
    }
    const refused = await rejection(pool.acquire('m', { excludeProviders: new Set(['a', 'b']) }));
    expect(refused.code).toBe('no_provider_available');
    expectIdle(pool);
  });

  it('skips a provider whose circuit is open and shows health open, then half_open', async () => {
    const { pool, circuits, clock } = withCircuits();
    circuits.failed('a', 'upstream_unreachable');
    circuits.failed('a', 'upstream_unreachable');
    expect(pool.snapshot().find((status) => status.providerId === 'a')?.health).toBe('open');
    const picks: (string | undefined)[] = [];
    for (let index = 0; index < 3; index += 1) {
      const lease = await pool.acquire('m');
      picks.push(lease.providerId);
      lease.release();
    }
    expect(picks).toEqual(['b', 'b', 'b']);
    clock.advance(1_000);
    expect(pool.snapshot().find((status) => status.providerId === 'a')?.health).toBe('half_open');
  });

  it('admits one half-open probe at a time; a probe released without a verdict lets the next one in', async () => {
    const { pool, circuits, clock } = withCircuits([providerConfig('a', { capacity: 4 })]);
    circuits.failed('a', 'node_busy');
    circuits.failed('a', 'node_busy');
    expect((await rejection(pool.acquire('m'))).code).toBe('no_provider_available');
    clock.advance(1_000);
    const probe = await pool.acquire('m');
    expect(probe.providerId).toBe('a');
    // The second caller waits: the provider's only admitted run is the probe.
    const second = pool.acquire('m');
    await delay(5);
    expect(pool.totals()).toEqual({ inFlight: 1, queued: 1 });
    probe.release();
    const next = await second;
    expect(next.providerId).toBe('a');
    circuits.succeeded('a');
    expect(circuits.state('a')).toBe('closed');
    const third = await pool.acquire('m');
    next.release();
    third.release();
    expectIdle(pool);
  });

  it('hands a waiting run to a provider as soon as its circuit closes (onChange → notifyChanged)', async () => {
    const clock = new ManualClock();
    let circuitChanged = (): void => undefined;
    const circuits = new CircuitBreaker({
      settings: {
        consecutive_failures: 1,
        failure_rate: 1,
        window_ms: 1_000,
        min_requests: 1,
        cooldown_ms: 500,
      },
      clock,
      logger: silentLogger,
      onChange: () => circuitChanged(),
    });
    const config = poolConfig([providerConfig('a', { capacity: 1 }), providerConfig('b', { capacity: 2 })]);
    const nodes = new FakeNodes();
    connectAll(nodes, config);
    const pool = createProviderPool({ config, nodes, circuits, clock, pollIntervalMs: 60_000 });
    circuitChanged = () => pool.notifyChanged();
    pools.push(pool);
    circuits.failed('b', 'upstream_unreachable');
    const onA = await pool.acquire('m');
    expect(onA.providerId).toBe('a');
    clock.advance(500);
    const probe = await pool.acquire('m');
    expect(probe.providerId).toBe('b');
    // a is full and b admits only its probe: the next run waits (no poll will come within the test).
    const waiting = pool.acquire('m');
    await delay(5);
    expect(pool.totals().queued).toBe(1);
    circuits.succeeded('b');
    const served = await waiting;
    expect(served.providerId).toBe('b');
    for (const lease of [onA, probe, served]) lease.release();
    expectIdle(pool);
  });
});
