// Usage added up across edges: the pure merge, and three edges' totals over a real nats-server (skipped with one
// printed line when it is missing) answered alike by every edge.
import { systemClock } from '../clock.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FabricBus } from './fabric-bus.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { createClusterUsage, mergeUsage, type ClusterUsage } from './cluster-usage.js';
import { createPeerCalls } from './peer-calls.js';

function row(group: string, runs: number, tokens: number, errors = 0): UsageRow {
  return {
    group,
    runs,
    inputTokens: tokens,
    outputTokens: 1,
    outcomes: { completed: runs - errors, error: errors, cancelled: 0, rejected: 0 },
    queueMsTotal: 2,
    durationMsTotal: 3,
  };
}

describe('mergeUsage', () => {
  it('adds up each group over the edges and sorts by tokens', () => {
    const first = [row('team-a', 2, 10), row('team-b', 1, 1)];
    const second = [row('team-b', 3, 30, 1)];
    expect(mergeUsage([first, second])).toEqual([
      {
        group: 'team-b',
        runs: 4,
        inputTokens: 31,
        outputTokens: 2,
        outcomes: { completed: 3, error: 1, cancelled: 0, rejected: 0 },
        queueMsTotal: 4,
        durationMsTotal: 6,
      },
      row('team-a', 2, 10),
    ]);
    // The inputs are not changed.
    expect(first[1]).toEqual(row('team-b', 1, 1));
  });

  it("adds child runs and keeps the latest record's time when the edges report them", () => {
    const merged = mergeUsage([
      [{ ...row('team-a', 2, 10), childRuns: 1, lastAtMs: 500 }],
      [{ ...row('team-a', 3, 10), childRuns: 2, lastAtMs: 300 }],
    ]);
    expect(merged.map((entry) => [entry.runs, entry.childRuns, entry.lastAtMs])).toEqual([[5, 3, 500]]);
  });
});

const available = natsServerAvailable('cluster usage tests');
const suite = available ? describe : describe.skip;

suite('usage across edges over NATS', () => {
  let nats: NatsServer;
  const connections: FabricBus[] = [];
  const usages: ClusterUsage[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterAll(async () => {
    for (const usage of usages) usage.close();
    for (const nc of connections) await nc.close();
    await nats?.stop();
  });

  it('every edge answers with the totals of all live edges; a bad group from a peer is refused', async () => {
    const ids = ['edge-a', 'edge-b', 'edge-c'];
    const stores: Record<string, UsageRow[]> = {
      'edge-a': [row('team-a', 1, 5)],
      'edge-b': [row('team-a', 2, 7)],
      'edge-c': [row('team-z', 1, 1)],
    };
    const asked: UsageQuery[] = [];
    for (const id of ids) {
      const nc = await connectFabric(nats.url, id);
      connections.push(nc);
      const peers = createPeerCalls({
        clock: systemClock,
        nc,
        edgeId: id,
        liveEdges: () => ids.filter((other) => other !== id),
      });
      usages.push(
        createClusterUsage({
          peers,
          local: (query) => {
            asked.push(query);
            return stores[id] ?? [];
          },
        }),
      );
      await nc.flush();
    }
    for (const usage of usages) {
      const rows = await usage.usage({ by: 'key', sinceMs: 5 });
      expect(rows.map((entry) => [entry.group, entry.runs, entry.inputTokens])).toEqual([
        ['team-a', 3, 12],
        ['team-z', 1, 1],
      ]);
    }
    expect(asked.every((query) => query.by === 'key' && query.sinceMs === 5)).toBe(true);
    const peers = createPeerCalls({
      clock: systemClock,
      nc: connections[0],
      edgeId: 'x',
      liveEdges: () => ['edge-b'],
    });
    expect(await peers.ask('usage', { by: 'nope', sinceMs: 0 })).toEqual({
      error: { code: 400, message: 'usage: unknown group' },
    });
  });
});
