// Cluster failover of long-lived runs over a real nats-server (skipped with one printed line when it is missing):
// the other edges first; the fabric's copy only for a run whose edge is not a live member; a run it left going
// ends as failed naming both edges (the kind's hook) and stays so for every later reader and for the edge itself
// when it comes back.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import { RESPONSE_DURABILITY } from '../openai/response-recovery.js';
import {
  DEFAULT_RUN_BOUNDS,
  type RemoteRuns,
  type RunKey,
  type RunUpdate,
  type StoredRun,
} from '../placement/run-directory.js';
import { RunRegistryError } from '../run-registry-error.js';
import { RunRegistry } from '../service/run-registry.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import type { FabricBus } from './fabric-bus.js';
import { FabricRunRecords } from './run-record-mirror.js';
import { withRunFailover } from './run-failover.js';

const available = natsServerAvailable('run failover tests');
const suite = available ? describe : describe.skip;

const key = (id: string, principal = 'team'): RunKey => ({ principal, kind: 'openai.response', id });

function record(id: string, state: unknown, endedAt?: number): StoredRun {
  const now = Date.now();
  return { key: key(id), state, createdAt: now, updatedAt: now, endedAt, edgeId: 'edge-1', boot: 'boot-a' };
}

/** The other edges' registries: every edge answers "none", or one could not be asked. */
function peers(answer: 'none' | 'unreachable'): RemoteRuns {
  const miss = <T>(): Promise<T | undefined> =>
    answer === 'unreachable'
      ? Promise.reject(new RunRegistryError('holder_lost', 'edge-1 did not answer'))
      : Promise.resolve(undefined);
  return { get: miss, cancel: miss, subscribe: miss, delete: async () => (await miss()) ?? false };
}

suite('run failover over NATS', () => {
  let nats: NatsServer;
  const buses: FabricBus[] = [];
  const plainConnections: NatsConnection[] = [];
  let bucketSequence = 0;
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const bus of buses.splice(0)) await bus.close();
    for (const plain of plainConnections.splice(0)) await plain.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  /** edge-1's mirror (the holder) and edge-2's failover directory over one fresh bucket. */
  async function cluster(options: { answer?: 'none' | 'unreachable'; edge1Live?: boolean } = {}) {
    const name = `iop_runs_failover_${(bucketSequence += 1).toString()}`;
    const plain = await connect({ servers: nats.url, noAsyncTraces: true });
    plainConnections.push(plain);
    const bucket = await new Kvm(plain).create(name, { history: 1, ttl: 60_000 });
    const mirrorOf = async (edgeId: string) => {
      const bus = await connectFabric(nats.url, edgeId);
      buses.push(bus);
      return new FabricRunRecords({
        kv: bus.kv(bucket, name, 60_000),
        edgeId,
        clock: systemClock,
        logger: silentLogger,
      });
    };
    const holder = await mirrorOf('edge-1');
    const mirror = await mirrorOf('edge-2');
    const registry = new RunRegistry({ clock: systemClock });
    registry.durability('openai.response', RESPONSE_DURABILITY);
    const runs = withRunFailover({
      remote: peers(options.answer ?? 'none'),
      mirror,
      edgeId: 'edge-2',
      isLive: (edgeId) => edgeId === 'edge-1' && options.edge1Live === true,
      local: () => registry,
      bounds: () => ({ ...DEFAULT_RUN_BOUNDS, ttlMs: 60_000 }),
      clock: systemClock,
    });
    const write = async (stored: StoredRun) => {
      holder.saved(stored);
      await holder.idle();
    };
    return { holder, mirror, runs, write };
  }

  it("answers a gone edge's ended run as it ended, and only for its own key", async () => {
    const { runs, write } = await cluster();
    await write(record('done', { id: 'done', status: 'completed', output_text: 'hi' }, Date.now()));
    expect(await runs.get(key('done'))).toEqual({
      state: { id: 'done', status: 'completed', output_text: 'hi' },
      ended: true,
    });
    expect(await runs.get(key('done', 'another-key'))).toBeUndefined();
  });

  it('ends a run the gone edge left going as failed naming both edges, and writes that ending back', async () => {
    const { runs, write, mirror } = await cluster({ answer: 'unreachable' });
    await write(record('going', { id: 'going', status: 'in_progress' }));
    const view = await runs.get(key('going'));
    expect(view?.ended).toBe(true);
    expect(view?.state).toMatchObject({
      status: 'failed',
      error: {
        code: 'edge_lost',
        message: expect.stringContaining(
          'edge edge-1 left the cluster while this response was in_progress',
        ) as unknown,
      },
    });
    expect((view?.state as { error: { message: string } }).error.message).toContain('edge edge-2 answered');
    expect((await mirror.read(key('going')))?.record).toMatchObject({
      failoverBy: 'edge-2',
      endedAt: expect.any(Number) as unknown,
    });
    // Every later answer is that same ending.
    expect(await runs.get(key('going'))).toEqual(view);
  });

  it('leaves a live edge to answer for its runs: none stays none, no answer stays an error', async () => {
    const live = await cluster({ edge1Live: true });
    await live.write(record('held', { status: 'in_progress' }));
    expect(await live.runs.get(key('held'))).toBeUndefined();
    const busy = await cluster({ edge1Live: true, answer: 'unreachable' });
    await busy.write(record('held', { status: 'in_progress' }));
    await expect(busy.runs.get(key('held'))).rejects.toMatchObject({ code: 'holder_lost' });
  });

  it('forgets an ended run past the ended-run TTL, as its own edge would', async () => {
    const { runs, write } = await cluster();
    await write(record('old', { status: 'completed' }, Date.now() - 61_000));
    expect(await runs.get(key('old'))).toBeUndefined();
  });

  it('answers cancel, subscribe and delete of a failed-over run like an ended run', async () => {
    const { runs, write, mirror } = await cluster();
    await write(record('c1', { id: 'c1', status: 'completed' }, Date.now()));
    expect(await runs.cancel(key('c1'), 'stop')).toEqual({
      view: { state: { id: 'c1', status: 'completed' }, ended: true },
      alreadyEnded: true,
    });
    const updates: RunUpdate[] = [];
    const stream = await runs.subscribe(key('c1'), new AbortController().signal);
    for await (const update of stream ?? []) updates.push(update);
    expect(updates).toEqual([{ state: { id: 'c1', status: 'completed' } }]);
    expect(await runs.delete(key('c1', 'another-key'))).toBe(false);
    expect(await runs.delete(key('c1'))).toBe(true);
    expect(await mirror.read(key('c1'))).toBeUndefined();
    expect(await runs.get(key('c1'))).toBeUndefined();
  });

  it('makes the edge that comes back take the failover ending instead of its restart ending', async () => {
    const { runs, write, holder } = await cluster();
    await write(record('back', { id: 'back', status: 'in_progress' }));
    const failedOver = await runs.get(key('back'));
    // edge-1 restarts: its registry restores the record and ends it naming its own restart, then copies it.
    const restarted = new RunRegistry({
      clock: systemClock,
      store: {
        save: (stored) => holder.saved(stored),
        remove: (runKey) => holder.removed(runKey),
        load: () => [record('back', { id: 'back', status: 'in_progress' })],
      },
      origin: { edgeId: 'edge-1', boot: 'boot-b' },
    });
    holder.adoptInto((runKey, state) => restarted.adoptEnding(runKey, state));
    restarted.restore();
    restarted.durability('openai.response', RESPONSE_DURABILITY);
    expect(restarted.getLocal(key('back'))?.state).toMatchObject({ error: { code: 'edge_restarted' } });
    await holder.idle();
    expect(restarted.getLocal(key('back'))).toEqual(failedOver);
  });
});
