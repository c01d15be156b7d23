import { describe, expect, it } from '@jest/globals';
import type { Clock } from '../clock.js';
import type { RunKey } from '../placement/run-directory.js';
import { RunRegistryError } from '../run-registry-error.js';
import { RunRegistry, type RestoredRun, type RunKindDurability } from './run-registry.js';
import { MemoryRunRecordStore } from './test-support/memory-run-record-store.js';

function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return {
    now: () => now,
    setTimeout: () => ({ refresh: () => undefined }),
    clearTimeout: () => undefined,
    advance: (ms) => {
      now += ms;
    },
  };
}

const key = (id: string, principal = ''): RunKey => ({ principal, kind: 'openai.response', id });

/** Writes on status changes; a run left going becomes `failed` naming the edge. */
const durability: RunKindDurability = {
  revision: (state) => String((state as { status: string }).status),
  interrupted: (state, restart) => ({
    ...(state as object),
    status: 'failed',
    restartedEdge: restart.edgeId,
  }),
};

function registryOver(store: MemoryRunRecordStore, clock = fakeClock(), boot = 'boot-1'): RunRegistry {
  return new RunRegistry({
    clock,
    store,
    origin: { edgeId: 'edge-a', boot },
    bounds: { 'openai.response': { maxEntries: 3, ttlMs: 1000 } },
  });
}

describe('RunRegistry with a record store', () => {
  it('writes on add, on a changed revision and on end — not on every update', () => {
    const store = new MemoryRunRecordStore();
    const registry = registryOver(store);
    registry.durability('openai.response', durability);
    const run = registry.add(key('r1', 'team'), { status: 'queued' }, () => undefined);
    expect(store.writes).toBe(1);
    expect(store.find(key('r1', 'team'))).toMatchObject({
      state: { status: 'queued' },
      endedAt: undefined,
      edgeId: 'edge-a',
      boot: 'boot-1',
    });
    run.update({ status: 'in_progress', text: 'a' });
    for (let token = 0; token < 50; token += 1) run.update({ status: 'in_progress', text: `a${token}` });
    expect(store.writes).toBe(2);
    run.end({ status: 'completed', text: 'done' });
    expect(store.writes).toBe(3);
    expect(store.find(key('r1', 'team'))).toMatchObject({
      state: { status: 'completed' },
      endedAt: 1_000_000,
    });
  });

  it('serves finished runs after a restart and ends the ones left going through the kind hook', async () => {
    const store = new MemoryRunRecordStore();
    const first = registryOver(store);
    first.durability('openai.response', durability);
    first.add(key('done', 'team'), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    first.add(key('going', 'team'), { status: 'queued' }, () => undefined).update({ status: 'in_progress' });

    const second = registryOver(store, fakeClock(), 'boot-2');
    expect(second.restore()).toEqual({ restored: 2, interrupted: 1 });
    expect(await second.get(key('done', 'team'))).toEqual({ state: { status: 'completed' }, ended: true });
    expect(await second.get(key('done', 'other'))).toBeUndefined();
    // Until the surface registers its hook the run is over but not yet rewritten.
    expect((await second.get(key('going', 'team')))?.ended).toBe(true);
    second.durability('openai.response', durability);
    expect(await second.get(key('going', 'team'))).toEqual({
      state: { status: 'failed', restartedEdge: 'edge-a' },
      ended: true,
    });
    expect(store.find(key('going', 'team'))).toMatchObject({
      state: { status: 'failed' },
      boot: 'boot-2',
    });
    expect(await second.cancel(key('going', 'team'), 'x')).toMatchObject({ alreadyEnded: true });
  });

  it('drops records past the TTL or the count bound at restore, and forgets what the registry forgets', () => {
    const store = new MemoryRunRecordStore();
    const clock = fakeClock();
    const first = registryOver(store, clock);
    for (const id of ['a', 'b', 'c'])
      first.add(key(id), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    // A fourth evicts the oldest ended run, in the store too.
    first.add(key('d'), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    expect(store.load().map((record) => record.key.id)).toEqual(['b', 'c', 'd']);
    clock.advance(1001);
    const second = registryOver(store, clock, 'boot-2');
    expect(second.restore()).toEqual({ restored: 3, interrupted: 0 });
    expect(second.size('openai.response')).toBe(0);
    expect(store.load()).toEqual([]);
  });

  it('removes the record when a run is deleted', async () => {
    const store = new MemoryRunRecordStore();
    const registry = registryOver(store);
    registry.add(key('r1'), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    expect(await registry.delete(key('r1'))).toBe(true);
    expect(store.load()).toEqual([]);
  });

  it('refuses an add whose record cannot be written, and holds nothing for it', async () => {
    const store = new MemoryRunRecordStore();
    store.save = () => {
      throw new Error('disk full');
    };
    const registry = registryOver(store);
    let refused: unknown;
    try {
      registry.add(key('r1'), { status: 'queued' }, () => undefined);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RunRegistryError);
    expect((refused as RunRegistryError).code).toBe('store_failed');
    expect(await registry.get(key('r1'))).toBeUndefined();
  });

  it('writes nothing and restores nothing without a store', () => {
    const registry = new RunRegistry({ clock: fakeClock() });
    registry.add(key('r1'), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    expect(registry.restore()).toEqual({ restored: 0, interrupted: 0 });
  });
});

describe('RunRegistry.localKeys', () => {
  it('lists the runs an earlier process left, oldest first, with their owners (A2A ListTasks after a restart)', () => {
    const store = new MemoryRunRecordStore();
    const clock = fakeClock();
    const before = registryOver(store, clock, 'boot-1');
    before.durability('openai.response', durability);
    before.add(key('r1', 'team'), { status: 'queued' }, () => undefined).end({ status: 'completed' });
    clock.advance(1);
    before.add(key('r2', 'other'), { status: 'queued' }, () => undefined);

    const after = registryOver(store, clock, 'boot-2');
    after.restore();
    after.durability('openai.response', durability);
    expect(after.localKeys('openai.response')).toEqual([key('r1', 'team'), key('r2', 'other')]);
    expect(after.localKeys('a2a.task')).toEqual([]);
  });
});

describe('RunRegistry in a cluster failover', () => {
  it("ends another edge's abandoned run through the kind's hook, naming the failover", () => {
    const registry = registryOver(new MemoryRunRecordStore());
    expect(
      registry.abandonedEnding(
        'openai.response',
        { status: 'in_progress' },
        {
          edgeId: 'edge-b',
          atMs: 5,
          answeredBy: 'edge-a',
        },
      ),
    ).toEqual({ status: 'in_progress' });
    registry.durability('openai.response', durability);
    expect(
      registry.abandonedEnding('openai.response', { status: 'in_progress' }, { edgeId: 'edge-b', atMs: 5 }),
    ).toEqual({ status: 'failed', restartedEdge: 'edge-b' });
  });

  it('adopts a failover ending: a going run is cancelled and ended with it, and the record is written', async () => {
    const store = new MemoryRunRecordStore();
    const registry = registryOver(store);
    registry.durability('openai.response', durability);
    const cancelled: string[] = [];
    const run = registry.add(key('r1', 'team'), { status: 'in_progress' }, (reason) => {
      cancelled.push(reason);
    });
    registry.adoptEnding(key('r1', 'other'), { status: 'failed', by: 'edge-b' });
    expect(run.ended).toBe(false);
    registry.adoptEnding(key('r1', 'team'), { status: 'failed', by: 'edge-b' });
    expect(run.ended).toBe(true);
    expect(cancelled).toHaveLength(1);
    expect(await registry.get(key('r1', 'team'))).toEqual({
      state: { status: 'failed', by: 'edge-b' },
      ended: true,
    });
    expect(store.find(key('r1', 'team'))?.state).toEqual({ status: 'failed', by: 'edge-b' });
    const writes = store.writes;
    // The same ending again changes nothing (no write: no loop through the mirror).
    registry.adoptEnding(key('r1', 'team'), { status: 'failed', by: 'edge-b' });
    expect(store.writes).toBe(writes);
    run.end({ status: 'cancelled' });
    expect((await registry.get(key('r1', 'team')))?.state).toEqual({ status: 'failed', by: 'edge-b' });
  });
});

describe('RunRegistry resume of runs left queued', () => {
  /** Like `durability`, plus: `queued` is resumable, and the hook records what it was offered. */
  function resuming(taken: RestoredRun[], take = true): RunKindDurability {
    return {
      ...durability,
      resumable: (state) => (state as { status: string }).status === 'queued',
      resume: (restored) => {
        taken.push(restored);
        if (take) restored.take(() => undefined).update({ status: 'queued', resumed: true });
      },
    };
  }

  it('keeps the payload in the record while queued and writes it as null on dispatch and on end', () => {
    const store = new MemoryRunRecordStore();
    const registry = registryOver(store);
    registry.durability('openai.response', resuming([]));
    const run = registry.add(key('r1', 'team'), { status: 'queued' }, () => undefined, { v: 1, body: 'b' });
    expect(store.find(key('r1', 'team'))?.resume).toEqual({ v: 1, body: 'b' });
    run.update({ status: 'in_progress' });
    expect(store.find(key('r1', 'team'))?.resume).toBeUndefined();

    const ended = registry.add(key('r2', 'team'), { status: 'queued' }, () => undefined, { v: 1 });
    ended.end({ status: 'cancelled' });
    expect(store.find(key('r2', 'team'))?.resume).toBeUndefined();
  });

  it('offers a run left queued with a payload to the resume hook, which takes the entry over', async () => {
    const store = new MemoryRunRecordStore();
    const first = registryOver(store);
    first.durability('openai.response', resuming([]));
    first.add(key('q', 'team'), { status: 'queued' }, () => undefined, { v: 1, body: 'secret' });

    const second = registryOver(store, fakeClock(), 'boot-2');
    expect(second.restore()).toEqual({ restored: 1, interrupted: 1 });
    const offered: RestoredRun[] = [];
    const cancels: string[] = [];
    second.durability('openai.response', {
      ...resuming(offered, false),
      resume: (restored) => {
        offered.push(restored);
        restored.take((reason) => {
          cancels.push(reason);
        });
      },
    });
    expect(offered.map((restored) => [restored.key, restored.payload, restored.restart.edgeId])).toEqual([
      [key('q', 'team'), { v: 1, body: 'secret' }, 'edge-a'],
    ]);
    // Going again, under this process; the payload is in the record, never in a lookup.
    const view = await second.get(key('q', 'team'));
    expect(view).toEqual({ state: { status: 'queued' }, ended: false });
    expect(JSON.stringify(view)).not.toContain('secret');
    expect(store.find(key('q', 'team'))).toMatchObject({ boot: 'boot-2', resume: { v: 1, body: 'secret' } });
    await second.cancel(key('q', 'team'), 'by the caller');
    expect(cancels).toEqual(['by the caller']);
  });

  it('interrupts a restored run that was dispatched, had no payload, or that the hook did not take', async () => {
    const store = new MemoryRunRecordStore();
    const first = registryOver(store);
    first.durability('openai.response', resuming([]));
    first
      .add(key('dispatched'), { status: 'queued' }, () => undefined, { v: 1 })
      .update({ status: 'in_progress' });
    first.add(key('bare'), { status: 'queued' }, () => undefined);
    first.add(key('refused'), { status: 'queued' }, () => undefined, { v: 1, refuse: true });

    const second = registryOver(store, fakeClock(), 'boot-2');
    second.restore();
    const offered: RestoredRun[] = [];
    second.durability('openai.response', {
      ...resuming(offered),
      resume: (restored) => {
        offered.push(restored);
      },
    });
    expect(offered.map((restored) => restored.key.id)).toEqual(['refused']);
    for (const id of ['dispatched', 'bare', 'refused']) {
      expect(await second.get(key(id))).toEqual({
        state: { status: 'failed', restartedEdge: 'edge-a' },
        ended: true,
      });
      expect(store.find(key(id))?.resume).toBeUndefined();
    }
  });

  it('interrupts a run left queued when its kind has no resume hook', async () => {
    const store = new MemoryRunRecordStore();
    const first = registryOver(store);
    first.add(key('q'), { status: 'queued' }, () => undefined, { v: 1 });
    const second = registryOver(store, fakeClock(), 'boot-2');
    second.restore();
    second.durability('openai.response', durability);
    expect((await second.get(key('q')))?.state).toEqual({ status: 'failed', restartedEdge: 'edge-a' });
  });

  it('resumes again after a second restart while the run is still queued, and not once it was dispatched', () => {
    const store = new MemoryRunRecordStore();
    const first = registryOver(store);
    first.durability('openai.response', resuming([]));
    first.add(key('q'), { status: 'queued' }, () => undefined, { v: 1 });
    const offered: RestoredRun[] = [];
    const second = registryOver(store, fakeClock(), 'boot-2');
    second.restore();
    second.durability('openai.response', resuming(offered));
    const third = registryOver(store, fakeClock(), 'boot-3');
    third.restore();
    third.durability('openai.response', resuming(offered));
    expect(offered.map((restored) => restored.restart.edgeId)).toEqual(['edge-a', 'edge-a']);
    expect(store.find(key('q'))?.resume).toEqual({ v: 1 });
  });
});
