// The fabric copy of the run records over a real nats-server (skipped with one printed line when it is missing):
// what one edge's queue writes another edge reads, sealed, for exactly its key; removals, the bounded queue, a
// dead connection (counted, never thrown) and the compare-and-set that makes a failover ending final.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import type { RunKey, StoredRun } from '../placement/run-directory.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import type { FabricBus } from './fabric-bus.js';
import { FabricRunRecords, runMirrorKey, type MirrorWriteResult } from './run-record-mirror.js';

const available = natsServerAvailable('run record mirror tests');
const suite = available ? describe : describe.skip;

const key = (id: string, principal = 'team'): RunKey => ({ principal, kind: 'openai.response', id });

function record(id: string, state: unknown, endedAt?: number, principal = 'team'): StoredRun {
  return {
    key: key(id, principal),
    state,
    createdAt: 1_000,
    updatedAt: 2_000,
    endedAt,
    edgeId: 'edge-1',
    boot: 'boot-a',
  };
}

suite('run record mirror over NATS', () => {
  let nats: NatsServer;
  const buses: FabricBus[] = [];
  const plainConnections: NatsConnection[] = [];
  let bucketSequence = 0;
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const bus of buses.splice(0)) if (!bus.isClosed()) await bus.close();
    for (const plain of plainConnections.splice(0)) if (!plain.isClosed()) await plain.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  /** Two edges' mirrors over one fresh bucket (created by a plain NATS connection). */
  async function edges(options: { maxQueued?: number } = {}) {
    const name = `iop_runs_test_${(bucketSequence += 1).toString()}`;
    const plain = await connect({ servers: nats.url, noAsyncTraces: true });
    plainConnections.push(plain);
    const bucket = await new Kvm(plain).create(name, { history: 1, ttl: 60_000 });
    const open = async (edgeId: string) => {
      const bus = await connectFabric(nats.url, edgeId);
      buses.push(bus);
      const results: MirrorWriteResult[] = [];
      const mirror = new FabricRunRecords({
        kv: bus.kv(bucket, name, 60_000),
        edgeId,
        clock: systemClock,
        logger: silentLogger,
        onWrite: (result) => results.push(result),
        ...(options.maxQueued !== undefined ? { maxQueued: options.maxQueued } : {}),
      });
      return { bus, mirror, results };
    };
    return { one: await open('edge-1'), two: await open('edge-2') };
  }

  it('copies a saved record for the other edges, for exactly its key, and removes it with a tombstone', async () => {
    const { one, two } = await edges();
    one.mirror.saved(record('r1', { status: 'in_progress' }));
    one.mirror.saved(record('r1', { status: 'completed' }, 3_000));
    await one.mirror.idle();
    const read = await two.mirror.read(key('r1'));
    expect(read?.record).toMatchObject({
      key: key('r1'),
      state: { status: 'completed' },
      endedAt: 3_000,
      edgeId: 'edge-1',
    });
    expect(await two.mirror.read(key('r1', 'other-team'))).toBeUndefined();
    expect(await two.mirror.read({ ...key('r1'), kind: 'a2a.task' })).toBeUndefined();
    one.mirror.removed(key('r1'));
    await one.mirror.idle();
    expect(await two.mirror.read(key('r1'))).toBeUndefined();
    expect(one.results.every((result) => result === 'ok')).toBe(true);
  });

  it('never blocks the writer: saved() returns before NATS answers, and a full queue drops (counted)', async () => {
    const { one } = await edges({ maxQueued: 2 });
    const started = Date.now();
    for (let index = 0; index < 5; index += 1) one.mirror.saved(record(`q${index.toString()}`, { n: index }));
    expect(Date.now() - started).toBeLessThan(50);
    await one.mirror.idle();
    // The first write left the queue at once (it is being written); two more waited; two found it full.
    expect(one.results.filter((result) => result === 'dropped')).toHaveLength(2);
    expect(one.results.filter((result) => result === 'ok')).toHaveLength(3);
  });

  it('counts a write NATS cannot take as failed and goes on', async () => {
    const { one } = await edges();
    // The bucket's connection (in the edge: the fabric bus's own) is gone.
    for (const plain of plainConnections) await plain.close();
    one.mirror.saved(record('dead', { status: 'queued' }));
    await one.mirror.idle();
    expect(one.results).toEqual(['failed']);
  });

  it('keeps a failover ending: the holder coming back is superseded and takes that ending', async () => {
    const { one, two } = await edges();
    one.mirror.saved(record('r2', { status: 'in_progress' }));
    await one.mirror.idle();
    const entry = await two.mirror.read(key('r2'));
    if (!entry) throw new Error('no entry');
    expect(await two.mirror.endByFailover(entry, { status: 'failed', by: 'edge-2' })).toBe(true);
    // A second failover over the same (now stale) revision loses.
    expect(await two.mirror.endByFailover(entry, { status: 'failed', by: 'late' })).toBe(false);
    const adopted: [RunKey, unknown][] = [];
    one.mirror.adoptInto((runKey, state) => adopted.push([runKey, state]));
    one.mirror.saved(record('r2', { status: 'failed', by: 'edge-1 restart' }, 4_000));
    await one.mirror.idle();
    expect(one.results).toEqual(['ok', 'superseded']);
    expect(adopted).toEqual([[key('r2'), { status: 'failed', by: 'edge-2' }]]);
    expect((await two.mirror.read(key('r2')))?.record).toMatchObject({
      state: { status: 'failed', by: 'edge-2' },
      failoverBy: 'edge-2',
    });
  });

  it('answers at once and counts the copy as failed while nats-server is down, then copies again', async () => {
    const { one, two } = await edges();
    await nats.kill();
    try {
      const started = Date.now();
      one.mirror.saved(record('down', { status: 'queued' }));
      expect(Date.now() - started).toBeLessThan(50);
      await one.mirror.idle();
      expect(one.results).toEqual(['failed']);
      process.stdout.write(
        `[run record mirror] a copy with nats-server down failed after ${Date.now() - started} ms\n`,
      );
    } finally {
      await nats.restart();
    }
    const deadline = Date.now() + 10_000;
    while (!one.results.includes('ok') && Date.now() < deadline) {
      one.mirror.saved(record('down', { status: 'completed' }, 5_000));
      await one.mirror.idle();
    }
    expect((await two.mirror.read(key('down')))?.record.state).toEqual({ status: 'completed' });
  });

  it('names each run under a fixed-size KV token, whatever its principal and id', () => {
    expect(runMirrorKey(key('a b/c*>', 'team.x'))).toMatch(/^run\.[0-9a-f]{64}$/);
    expect(runMirrorKey(key('x', 'team-a'))).not.toBe(runMirrorKey(key('a-x', 'team')));
  });
});
