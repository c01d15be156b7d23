// The pool's queue discipline (fair share between keys) and conversation affinity, on a manual clock.
import { afterEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import {
  createProviderPool,
  type AcquireOptions,
  type AffinityResult,
  type Lease,
  type PoolConfig,
  type ProviderPool,
} from './provider-pool.js';
import {
  connectAll,
  FakeNodes,
  modelConfig,
  nodeConfig,
  providerConfig,
} from './test-support/pool-fixture.js';

const pools: ProviderPool[] = [];

afterEach(() => {
  for (const pool of pools.splice(0)) pool.close();
});

function makePool(config: PoolConfig) {
  const nodes = new FakeNodes();
  connectAll(nodes, config);
  const clock = new ManualClock();
  const affinity: AffinityResult[] = [];
  const pool = createProviderPool({
    config,
    nodes,
    clock,
    pollIntervalMs: 60_000,
    metrics: { affinity: (result) => affinity.push(result) },
  });
  pools.push(pool);
  return { pool, nodes, clock, affinity };
}

/** One model `m` on the given providers, all on one node `n` (max_concurrency 0 = unlimited). */
function config(
  providers: ReturnType<typeof providerConfig>[],
  affinity = { enabled: true, hash_messages: true, max_wait_ms: 0 },
): PoolConfig {
  const node = {
    ...nodeConfig('n', providers),
    runtime: { max_concurrency: 0, health_probe_interval_ms: 0, resident_poll_interval_ms: 0 },
  };
  return {
    models: [
      modelConfig('m', Object.fromEntries(providers.map((p) => [p.id, `served-${p.id}`])), { affinity }),
    ],
    nodes: [node],
  };
}

/** Settles pending promise callbacks. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Requests on a capacity-1 model: acquire() records the order leases are granted; serveNext() releases the
 * lease running now so the queue hands the slot to its next waiter.
 */
function harness(pool: ProviderPool) {
  const served: string[] = [];
  const leases = new Map<string, Lease>();
  const errors = new Map<string, string>();
  return {
    served,
    errors,
    acquire(name: string, options: AcquireOptions = {}) {
      void pool.acquire('m', options).then(
        (lease) => {
          served.push(name);
          leases.set(name, lease);
        },
        (error: { code?: string }) => errors.set(name, error.code ?? 'unknown'),
      );
    },
    async serveNext() {
      const running = served[served.length - 1];
      if (running !== undefined) leases.get(running)?.release();
      await flush();
    },
  };
}

describe('fair share between keys', () => {
  it('serves a quiet key between a noisy key’s queued requests, FIFO within each', async () => {
    const { pool } = makePool(config([providerConfig('a', { capacity: 1, max_queue: 100 })]));
    const h = harness(pool);
    for (let index = 0; index <= 10; index += 1) h.acquire(`noisy-${index}`, { principalKey: 'noisy' });
    await flush();
    for (let index = 0; index < 3; index += 1) h.acquire(`quiet-${index}`, { principalKey: 'quiet' });
    await flush();
    expect(pool.totals()).toEqual({ inFlight: 1, queued: 13 });
    for (let step = 0; step < 14; step += 1) await h.serveNext();
    expect(h.served).toEqual([
      'noisy-0',
      'noisy-1',
      'quiet-0',
      'noisy-2',
      'quiet-1',
      'noisy-3',
      'quiet-2',
      'noisy-4',
      'noisy-5',
      'noisy-6',
      'noisy-7',
      'noisy-8',
      'noisy-9',
      'noisy-10',
    ]);
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('gives a weight-3 key three slots per slot of a weight-1 key while both wait', async () => {
    const { pool } = makePool(config([providerConfig('a', { capacity: 1, max_queue: 100 })]));
    const h = harness(pool);
    h.acquire('first', { principalKey: 'x' });
    await flush();
    for (let index = 0; index < 8; index += 1) {
      h.acquire(`heavy-${index}`, { principalKey: 'heavy', weight: 3 });
      h.acquire(`light-${index}`, { principalKey: 'light', weight: 1 });
    }
    await flush();
    for (let step = 0; step < 8; step += 1) await h.serveNext();
    const granted = h.served.slice(1, 9);
    expect(granted.filter((name) => name.startsWith('heavy'))).toHaveLength(6);
    expect(granted.filter((name) => name.startsWith('light'))).toHaveLength(2);
    for (let step = 0; step < 9; step += 1) await h.serveNext();
    expect(h.served).toHaveLength(17);
  });

  it('keeps batch keys waiting while an interactive waiter can be served', async () => {
    const { pool } = makePool(config([providerConfig('a', { capacity: 1, max_queue: 100 })]));
    const h = harness(pool);
    h.acquire('bulk-0', { principalKey: 'bulk', priority: 'batch' });
    await flush();
    h.acquire('bulk-1', { principalKey: 'bulk', priority: 'batch' });
    h.acquire('bulk-2', { principalKey: 'bulk', priority: 'batch' });
    h.acquire('chat-0', { principalKey: 'chat' });
    h.acquire('anon-0');
    await flush();
    for (let step = 0; step < 5; step += 1) await h.serveNext();
    expect(h.served).toEqual(['bulk-0', 'chat-0', 'anon-0', 'bulk-1', 'bulk-2']);
  });

  it('keeps queue_timeout, aborts and max_queue per request', async () => {
    const { pool, clock } = makePool(
      config([providerConfig('a', { capacity: 1, max_queue: 3, queue_timeout_ms: 1000 })]),
    );
    const h = harness(pool);
    h.acquire('running', { principalKey: 'noisy' });
    await flush();
    h.acquire('noisy-1', { principalKey: 'noisy' });
    const controller = new AbortController();
    h.acquire('noisy-2', { principalKey: 'noisy', signal: controller.signal });
    h.acquire('quiet-1', { principalKey: 'quiet' });
    h.acquire('quiet-2', { principalKey: 'quiet' });
    await flush();
    expect(h.errors.get('quiet-2')).toBe('queue_full');
    controller.abort();
    await flush();
    expect(h.errors.get('noisy-2')).toBe('aborted');
    clock.advance(1000);
    await flush();
    expect(h.errors.get('noisy-1')).toBe('queue_timeout');
    expect(h.errors.get('quiet-1')).toBe('queue_timeout');
    await h.serveNext();
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('rejects every waiter of every key with shutting_down on close', async () => {
    const { pool } = makePool(config([providerConfig('a', { capacity: 1, max_queue: 10 })]));
    const h = harness(pool);
    h.acquire('running', { principalKey: 'a' });
    await flush();
    h.acquire('a-1', { principalKey: 'a' });
    h.acquire('b-1', { principalKey: 'b', priority: 'batch' });
    await flush();
    pool.close();
    await flush();
    expect([...h.errors.entries()].sort()).toEqual([
      ['a-1', 'shutting_down'],
      ['b-1', 'shutting_down'],
    ]);
  });

  it('applies the same discipline to an explicit route’s queue', async () => {
    const { pool } = makePool(config([providerConfig('a', { capacity: 1, max_queue: 10 })]));
    const served: string[] = [];
    const leases: Lease[] = [];
    const route = { nodeId: 'n', adapter: 'openai_compat', target: 'served-a' };
    const take = (name: string, principalKey: string) =>
      void pool.acquireRoute(route, { principalKey }).then((lease) => {
        served.push(name);
        leases.push(lease);
      });
    take('noisy-0', 'noisy');
    await flush();
    take('noisy-1', 'noisy');
    take('noisy-2', 'noisy');
    take('quiet-0', 'quiet');
    await flush();
    for (let step = 0; step < 4; step += 1) {
      leases[leases.length - 1]?.release();
      await flush();
    }
    expect(served).toEqual(['noisy-0', 'noisy-1', 'quiet-0', 'noisy-2']);
  });
});

describe('conversation affinity', () => {
  it('sends every turn of a conversation to the provider that served it last', async () => {
    const { pool, affinity } = makePool(
      config([providerConfig('a', { capacity: 2 }), providerConfig('b', { capacity: 2 })]),
    );
    const providers: string[] = [];
    for (let turn = 0; turn < 12; turn += 1) {
      // Another conversation in between moves the round robin on.
      const other = await pool.acquire('m', { affinityKey: `other-${turn}` });
      const lease = await pool.acquire('m', { affinityKey: 'conv-1' });
      providers.push(lease.providerId as string);
      lease.release();
      other.release();
    }
    expect(new Set(providers).size).toBe(1);
    expect(affinity.filter((result) => result === 'hit')).toHaveLength(11);
    expect(affinity.filter((result) => result === 'miss')).toHaveLength(13);
  });

  it('spreads new conversations by the normal order and never exceeds capacity', async () => {
    const { pool } = makePool(
      config([
        providerConfig('a', { capacity: 2, max_queue: 50 }),
        providerConfig('b', { capacity: 2, max_queue: 50 }),
      ]),
    );
    const leases = await Promise.all(
      [0, 1, 2, 3].map((index) => pool.acquire('m', { affinityKey: `c${index}` })),
    );
    expect(leases.map((lease) => lease.providerId).sort()).toEqual(['a', 'a', 'b', 'b']);
    // Conversation c0 (on its provider, now full) spills to nothing: it waits like anyone else.
    let placed: Lease | undefined;
    void pool.acquire('m', { affinityKey: 'c0' }).then((lease) => (placed = lease));
    await flush();
    expect(placed).toBeUndefined();
    expect(pool.snapshot().map((status) => status.inFlight)).toEqual([2, 2]);
    const other = leases.find((lease) => lease.providerId !== leases[0]?.providerId) as Lease;
    other.release();
    await flush();
    // max_wait_ms 0: the slot on the other provider is taken at once (a spill), capacity still 2 + 2.
    expect(placed?.providerId).toBe(other.providerId);
    expect(pool.snapshot().map((status) => status.inFlight)).toEqual([2, 2]);
    for (const lease of [...leases, placed as Lease]) lease.release();
  });

  it('waits up to max_wait_ms for the busy provider of the key, then spills', async () => {
    const { pool, clock, affinity } = makePool(
      config([providerConfig('a', { capacity: 1 }), providerConfig('b', { capacity: 1 })], {
        enabled: true,
        hash_messages: true,
        max_wait_ms: 500,
      }),
    );
    const first = await pool.acquire('m', { affinityKey: 'conv' });
    const home = first.providerId;
    let second: Lease | undefined;
    void pool.acquire('m', { affinityKey: 'conv' }).then((lease) => (second = lease));
    await flush();
    // The other provider is free, but the run holds out for its own.
    expect(second).toBeUndefined();
    // Meanwhile a run without a key takes the free provider: holding does not block the queue.
    const stranger = await pool.acquire('m');
    expect(stranger.providerId).not.toBe(home);
    stranger.release();
    await flush();
    expect(second).toBeUndefined();
    clock.advance(499);
    await flush();
    expect(second).toBeUndefined();
    clock.advance(1);
    await flush();
    expect(second?.providerId).not.toBe(home);
    expect(affinity).toEqual(['miss', 'spill']);
    // The conversation moved: its next turn prefers the provider it spilled to.
    second?.release();
    first.release();
    const third = await pool.acquire('m', { affinityKey: 'conv' });
    expect(third.providerId).toBe(second?.providerId);
    third.release();
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('takes the key’s provider when it frees up within max_wait_ms', async () => {
    const { pool, affinity } = makePool(
      config([providerConfig('a', { capacity: 1 }), providerConfig('b', { capacity: 1 })], {
        enabled: true,
        hash_messages: true,
        max_wait_ms: 500,
      }),
    );
    const first = await pool.acquire('m', { affinityKey: 'conv' });
    let second: Lease | undefined;
    void pool.acquire('m', { affinityKey: 'conv' }).then((lease) => (second = lease));
    await flush();
    first.release();
    await flush();
    expect(second?.providerId).toBe(first.providerId);
    expect(affinity).toEqual(['miss', 'hit']);
    second?.release();
  });

  it('ignores the key when the model has affinity off, and when its provider is gone', async () => {
    const providers = [providerConfig('a', { capacity: 4 }), providerConfig('b', { capacity: 4 })];
    const { pool, nodes, affinity } = makePool(config(providers));
    const first = await pool.acquire('m', { affinityKey: 'conv' });
    first.release();
    nodes.setHealth('n', first.providerId as string, 'unhealthy');
    const moved = await pool.acquire('m', { affinityKey: 'conv' });
    expect(moved.providerId).not.toBe(first.providerId);
    moved.release();
    expect(affinity).toEqual(['miss', 'miss']);
    pool.applyConfig(config(providers, { enabled: false, hash_messages: true, max_wait_ms: 0 }));
    const off = await pool.acquire('m', { affinityKey: 'conv' });
    off.release();
    expect(affinity).toHaveLength(2);
  });
});
