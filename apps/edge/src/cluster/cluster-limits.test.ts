// Cluster-wide key limits over a real nats-server (skipped with one printed line when it is missing): three edges,
// each with its own governor, agree on one home per key and count the key there, whichever edge asks.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { FabricBus } from './fabric-bus.js';
import { connectFabric, testBootId } from '../test-support/fabric-bus-fixture.js';
import { GovernanceError } from '../governance/errors.js';
import { createGovernor, periodAt, type Governor } from '../governance/governor.js';
import { testPrincipal as key } from '../governance/test-support/test-principal.js';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { createClusterLimits, rendezvousHome, type ClusterLimits } from './cluster-limits.js';

const available = natsServerAvailable('cluster limits tests');
const suite = available ? describe : describe.skip;

interface TestEdge {
  id: string;
  governor: Governor;
  limits: ClusterLimits;
  nc: FabricBus;
}

let nats: NatsServer;
const edges: TestEdge[] = [];
const clock = new ManualClock();

async function startEdges(
  ids: string[],
  live: () => string[] = () => ids,
  spentElsewhere?: (principalId: string, sinceMs: number) => Promise<number>,
): Promise<TestEdge[]> {
  const started: TestEdge[] = [];
  for (const id of ids) {
    const nc = await connectFabric(nats.url, id);
    const governor = createGovernor({
      clock,
      sink: { record: () => undefined },
      spent: { tokensSince: () => 0 },
    });
    const limits = createClusterLimits({
      nc,
      edgeId: id,
      liveEdges: () => live().filter((other) => other !== id),
      governor,
      logger: silentLogger,
      timeoutMs: 1000,
      clock,
      leaseTtlMs: 6000,
      ...(spentElsewhere ? { spentElsewhere } : {}),
    });
    await nc.flush();
    const edge = { id, governor, limits, nc };
    edges.push(edge);
    started.push(edge);
  }
  return started;
}

async function refusal(run: () => Promise<unknown>): Promise<GovernanceError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof GovernanceError) return error;
    throw error;
  }
  throw new Error('expected a GovernanceError');
}

async function waitFor(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('rendezvousHome', () => {
  it('picks one edge per key whatever the order, and moves only the keys of an edge that leaves', () => {
    const all = ['edge-a', 'edge-b', 'edge-c'];
    const keys = Array.from({ length: 300 }, (_, index) => `key-${index}`);
    const homes = keys.map((id) => rendezvousHome(all, id));
    expect(keys.map((id) => rendezvousHome([...all].reverse(), id))).toEqual(homes);
    // Spread over every edge.
    for (const edgeId of all) expect(homes.filter((home) => home === edgeId).length).toBeGreaterThan(50);
    const without = keys.map((id) => rendezvousHome(['edge-a', 'edge-c'], id));
    keys.forEach((_, index) => {
      if (homes[index] !== 'edge-b') expect(without[index]).toBe(homes[index]);
    });
  });
});

suite('cluster-wide key limits over NATS', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const edge of edges.splice(0)) {
      edge.limits.close();
      await edge.nc.close();
    }
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('admits max_concurrent 2 cluster-wide across three edges, and frees the slot when a run ends', async () => {
    const all = await startEdges(['edge-a', 'edge-b', 'edge-c']);
    const principal = key({ max_concurrent: 2 });
    const home = all[0]?.limits.homeOf(principal.id);
    for (const edge of all) expect(edge.limits.homeOf(principal.id)).toBe(home);
    const [a, b, c] = all as [TestEdge, TestEdge, TestEdge];
    const first = await a.limits.reserve(principal, 10);
    const second = await b.limits.reserve(principal, 10);
    expect(first.lease).toBeDefined();
    expect(second.lease).toBeDefined();
    const refused = await refusal(() => c.limits.reserve(principal, 10));
    expect(refused).toMatchObject({
      code: 'concurrency_limited',
      limit: 'max_concurrent',
      retryAfterSeconds: 1,
    });
    expect(await refusal(() => a.limits.reserve(principal, 10))).toMatchObject({
      code: 'concurrency_limited',
    });
    const homeEdge = all.find((edge) => edge.id === home) as TestEdge;
    expect(homeEdge.limits.held).toBe(2);
    // Only the home counts the key.
    for (const edge of all) {
      expect(edge.governor.snapshot().length).toBe(edge.id === home ? 1 : 0);
    }
    first.lease?.finish(7);
    first.lease?.finish(7);
    await waitFor(() => homeEdge.limits.held === 1);
    expect(homeEdge.governor.snapshot()[0]).toMatchObject({ inFlight: 1, tokensLastMinute: 17 });
    const third = await c.limits.reserve(principal, 1);
    expect(third.lease).toBeDefined();
    // An agent's model call (a child run) is counted for rpm/tpm/budget but takes no max_concurrent slot.
    const child = await c.limits.reserve(principal, 1, true);
    expect(child.lease).toBeDefined();
    expect(homeEdge.governor.snapshot()[0]).toMatchObject({ inFlight: 2 });
  });

  it('counts rpm cluster-wide: the limit is reached whichever edge the requests arrive at', async () => {
    const all = await startEdges(['edge-a', 'edge-b']);
    const principal = key({ rpm: 3 });
    const admitted: boolean[] = [];
    for (let index = 0; index < 6; index += 1) {
      const edge = all[index % 2];
      try {
        const leased = await edge.limits.reserve(principal, 1);
        leased.lease?.finish(1);
        admitted.push(true);
      } catch (error) {
        expect(error).toMatchObject({ code: 'rate_limited', limit: 'rpm' });
        expect((error as GovernanceError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
        admitted.push(false);
      }
    }
    expect(admitted).toEqual([true, true, true, false, false, false]);
  });

  it('a run forwarded with a lease releases it on the home from the edge that ran it, and from no other', async () => {
    const all = await startEdges(['edge-a', 'edge-b', 'edge-c']);
    const principal = key({ max_concurrent: 1 });
    const home = all[0]?.limits.homeOf(principal.id);
    const homeEdge = all.find((edge) => edge.id === home) as TestEdge;
    const [requester, owner] = all.filter((edge) => edge.id !== home) as [TestEdge, TestEdge];
    const leased = await requester.limits.reserve(principal, 4);
    const lease = leased.lease as unknown as { ref: { home: string; id: string } };
    expect(lease.ref.home).toBe(home);
    // An edge the requester did not forward the run to cannot release the lease.
    owner.limits.withLimitLease(principal, lease.ref).lease?.finish(9);
    await owner.nc.flush();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(homeEdge.limits.held).toBe(1);
    // Forwarded: the requester grants the owner the lease before it sends the run.
    requester.limits.grant(lease.ref, owner.id);
    await requester.nc.flush();
    // The owner rebuilds the principal from the wire and finishes the lease when the run ends.
    const atOwner = owner.limits.withLimitLease(principal, lease.ref);
    atOwner.lease?.finish(9);
    await waitFor(() => homeEdge.limits.held === 0);
    // The requester's own release (e.g. after a refusal) changes nothing: releases are idempotent per lease.
    leased.lease?.finish(0);
    await owner.nc.flush();
    await requester.nc.flush();
    expect(homeEdge.governor.snapshot()[0]).toMatchObject({ inFlight: 0, tokensLastMinute: 9 });
  });

  it('releases the leases of an edge that left, and refuses a run while its home does not answer', async () => {
    let live = ['edge-a', 'edge-b', 'edge-ghost'];
    const [a, b] = await startEdges(['edge-a', 'edge-b'], () => live);
    const limitsA = a.limits;
    // A key whose home is the edge that is not there (its state not yet expired): the run is refused, not
    // counted here.
    const ids = Array.from({ length: 50 }, (_, index) => `key-${index}`);
    const ghostKey = ids.find((id) => limitsA.homeOf(id) === 'edge-ghost') as string;
    const orphan = await refusal(() => limitsA.reserve(key({ id: ghostKey, max_concurrent: 1 }), 1));
    expect(orphan).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1 });
    expect(orphan.message).toContain('edge edge-ghost');
    live = ['edge-a', 'edge-b'];
    const homeB = ids.find((id) => limitsA.homeOf(id) === 'edge-b') as string;
    const principal = key({ id: homeB, max_concurrent: 1 });
    await limitsA.reserve(principal, 1);
    expect(b.limits.held).toBe(1);
    // Edge-a seen restarted with the boot id that reserved it: that lease belongs to the new life, kept.
    b.limits.edgeGone('edge-a', testBootId('edge-a'));
    expect(b.limits.held).toBe(1);
    // A later boot id: the process that reserved it is gone.
    b.limits.edgeGone('edge-a', 'f00d');
    expect(b.limits.held).toBe(0);
    await limitsA.reserve(principal, 1);
    b.limits.edgeGone('edge-a');
    expect(b.limits.held).toBe(0);
    expect((await limitsA.reserve(principal, 1)).lease).toBeDefined();
  });

  it('a budget counts what the other edges spent this period (asked once per key), then what the runs report', async () => {
    const asked: [string, number][] = [];
    const all = await startEdges(['edge-a', 'edge-b'], undefined, (principalId, sinceMs) => {
      asked.push([principalId, sinceMs]);
      return Promise.resolve(90);
    });
    const principal = key({ token_budget: { tokens: 100, per: 'day' } });
    const [a, b] = all as [TestEdge, TestEdge];
    const leases = await Promise.all([a.limits.reserve(principal, 2), b.limits.reserve(principal, 2)]);
    expect(asked).toEqual([['team-a', periodAt(clock.now(), 'day').startMs]]);
    for (const leased of leases) leased.lease?.finish(6);
    const home = all.find((edge) => edge.id === a.limits.homeOf(principal.id)) as TestEdge;
    await waitFor(() => home.limits.held === 0);
    // 90 spent elsewhere + 12 reported here ≥ 100.
    expect(await refusal(() => b.limits.reserve(principal, 1))).toMatchObject({
      code: 'budget_exhausted',
      limit: 'token_budget',
    });
    expect(asked).toHaveLength(1);
  });

  it('refuses a budgeted run while the other edges’ spending is unknown, and keeps no partial figure', async () => {
    let failures = 1;
    let asked = 0;
    const all = await startEdges(['edge-a', 'edge-b'], undefined, () => {
      asked += 1;
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(new Error('edge edge-c could not be asked'));
      }
      return Promise.resolve(10);
    });
    const principal = key({ token_budget: { tokens: 100, per: 'day' } });
    const [a, b] = all as [TestEdge, TestEdge];
    for (const edge of [a, b]) {
      const refused = await refusal(() => edge.limits.reserve(principal, 2));
      expect(refused.code).toBe('rate_limited');
      expect(refused.message).toContain(`edge ${a.limits.homeOf(principal.id)}`);
      failures = 1;
    }
    failures = 0;
    // Asked again (nothing was cached), and counted from then on.
    expect((await a.limits.reserve(principal, 2)).lease).toBeDefined();
    expect(asked).toBe(3);
  });

  it('keeps a lease its holder still reports open, and releases one nobody holds any more (a lost release)', async () => {
    const all = await startEdges(['edge-a', 'edge-b']);
    const ids = Array.from({ length: 50 }, (_, index) => `key-${index}`);
    const [a, b] = all as [TestEdge, TestEdge];
    const principal = key({
      id: ids.find((id) => a.limits.homeOf(id) === 'edge-b') as string,
      max_concurrent: 2,
    });
    const kept = await a.limits.reserve(principal, 3);
    const lost = await a.limits.reserve(principal, 3);
    // As if the run was handed to an edge that then lost the release: nobody reports it any more.
    (lost.lease as unknown as { handOff(): void }).handOff();
    expect(b.limits.held).toBe(2);
    for (let step = 0; step < 8; step += 1) {
      clock.advance(1000);
      a.limits.tick();
      await a.nc.flush();
      // Let edge-b read the report before it sweeps.
      await new Promise((resolve) => setTimeout(resolve, 10));
      b.limits.tick();
    }
    expect(b.limits.held).toBe(1);
    expect(b.governor.snapshot()[0]).toMatchObject({ inFlight: 1 });
    kept.lease?.finish(3);
    await waitFor(() => b.limits.held === 0);
  });
});
