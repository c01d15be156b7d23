import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import { ManualClock } from '@iop/clock';
import { openUsageDatabase } from './usage-database.js';
import { UsageStore, type UsageRecord } from './usage-store.js';

function record(overrides: Partial<UsageRecord>): UsageRecord {
  return {
    atMs: 0,
    runId: 'r',
    principal: 'a',
    surface: 'openai',
    model: 'm1',
    provider: 'p1',
    node: 'n1',
    inputTokens: 0,
    outputTokens: 0,
    queueMs: 0,
    durationMs: 0,
    outcome: 'completed',
    ...overrides,
  };
}

describe('UsageStore', () => {
  let dir: string;
  let file: string;
  const stores: UsageStore[] = [];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-usage-'));
    file = path.join(dir, 'usage.db');
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function open(
    clock: ManualClock,
    options: { batchSize?: number; retentionDays?: number } = {},
  ): UsageStore {
    const store = new UsageStore({
      db: openUsageDatabase(file).db,
      clock,
      logger: silentLogger,
      retentionDays: options.retentionDays ?? 30,
      batchSize: options.batchSize,
      flushIntervalMs: 1000,
    });
    stores.push(store);
    return store;
  }

  it('sums tokens and runs by key, model, node and provider', () => {
    const clock = new ManualClock();
    const store = open(clock);
    const now = clock.now();
    store.record(record({ atMs: now, principal: 'a', model: 'm1', inputTokens: 10, outputTokens: 5 }));
    store.record(record({ atMs: now, principal: 'a', model: 'm2', inputTokens: 1, outputTokens: 2 }));
    store.record(
      record({ atMs: now, principal: 'b', model: 'm1', node: 'n2', inputTokens: 3, outcome: 'rejected' }),
    );
    const byKey = store.summary({ by: 'key', sinceMs: 0 });
    expect(byKey.map((row) => [row.group, row.runs, row.inputTokens, row.outputTokens])).toEqual([
      ['a', 2, 11, 7],
      ['b', 1, 3, 0],
    ]);
    expect(byKey[1]?.outcomes).toEqual({ completed: 0, error: 0, cancelled: 0, rejected: 1 });
    expect(store.summary({ by: 'model', sinceMs: 0 }).map((row) => [row.group, row.inputTokens])).toEqual([
      ['m1', 13],
      ['m2', 1],
    ]);
    expect(store.summary({ by: 'node', sinceMs: 0 }).map((row) => row.group)).toEqual(['n1', 'n2']);
    expect(store.summary({ by: 'key', sinceMs: now + 1 })).toEqual([]);
  });

  it('buffers writes and commits a batch on the next turn when full, or after the flush interval', () => {
    const clock = new ManualClock();
    const store = open(clock, { batchSize: 3 });
    const reader = openUsageDatabase(file).db;
    const count = () => (reader.prepare('SELECT COUNT(*) AS n FROM usage').get() as { n: number }).n;
    store.record(record({ atMs: clock.now() }));
    store.record(record({ atMs: clock.now() }));
    expect(count()).toBe(0);
    store.record(record({ atMs: clock.now() }));
    expect(count()).toBe(0); // never inside the turn that ended the run
    clock.advance(0);
    expect(count()).toBe(3);
    store.record(record({ atMs: clock.now() }));
    expect(count()).toBe(3);
    clock.advance(1000);
    expect(count()).toBe(4);
    reader.close();
  });

  it('writes a batch larger than one multi-row INSERT whole and in order, every field intact', () => {
    const clock = new ManualClock();
    const store = open(clock, { batchSize: 500 });
    for (let index = 0; index < 123; index += 1) {
      store.record(
        record({
          atMs: 1000 + index,
          runId: `run-${index}`,
          principal: `k${index % 3}`,
          inputTokens: index,
          outputTokens: 2 * index,
          queueMs: index / 4,
          durationMs: index / 2,
          outcome: index % 2 ? 'error' : 'completed',
        }),
      );
    }
    store.flush();
    const reader = openUsageDatabase(file).db;
    const rows = reader
      .prepare(
        'SELECT run_id, principal, input_tokens, output_tokens, queue_ms, duration_ms, outcome FROM usage ORDER BY id',
      )
      .all() as {
      run_id: string;
      principal: string;
      input_tokens: number;
      output_tokens: number;
      queue_ms: number;
      duration_ms: number;
      outcome: string;
    }[];
    reader.close();
    expect(rows).toHaveLength(123);
    rows.forEach((row, index) =>
      expect(row).toEqual({
        run_id: `run-${index}`,
        principal: `k${index % 3}`,
        input_tokens: index,
        output_tokens: 2 * index,
        queue_ms: index / 4,
        duration_ms: index / 2,
        outcome: index % 2 ? 'error' : 'completed',
      }),
    );
    expect(store.summary({ by: 'key', sinceMs: 0 }).reduce((sum, row) => sum + row.runs, 0)).toBe(123);
  });

  it("records a child run's parent and an agent run's children's tokens; a version-1 table gains both columns", () => {
    const clock = new ManualClock();
    // A store written before child runs existed.
    const old = openUsageDatabase(file).db;
    old.exec(`CREATE TABLE usage (id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, run_id TEXT NOT NULL,
      principal TEXT NOT NULL, surface TEXT NOT NULL, model TEXT NOT NULL, provider TEXT NOT NULL, node TEXT NOT NULL,
      input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, queue_ms REAL NOT NULL,
      duration_ms REAL NOT NULL, outcome TEXT NOT NULL)`);
    old.exec(`INSERT INTO usage (at_ms, run_id, principal, surface, model, provider, node, input_tokens,
      output_tokens, queue_ms, duration_ms, outcome) VALUES (${clock.now()}, 'before', 'a', 'openai', 'm1', 'p1', 'n1', 1, 1, 0, 0,
      'completed')`);
    old.close();
    const store = open(clock);
    store.record(
      record({ atMs: clock.now(), runId: 'agent', inputTokens: 10, outputTokens: 1, childTokens: 15 }),
    );
    store.record(
      record({ atMs: clock.now(), runId: 'call', inputTokens: 3, outputTokens: 2, parentRunId: 'agent' }),
    );
    store.flush();
    const reader = openUsageDatabase(file).db;
    const rows = reader.prepare('SELECT run_id, parent_run_id, child_tokens FROM usage ORDER BY id').all();
    expect((reader.prepare('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(2);
    reader.close();
    expect(rows).toEqual([
      { run_id: 'before', parent_run_id: '', child_tokens: 0 },
      { run_id: 'agent', parent_run_id: '', child_tokens: 15 },
      { run_id: 'call', parent_run_id: 'agent', child_tokens: 0 },
    ]);
    // Every token once: the agent's own and each child's.
    expect(store.tokensSince('a', 0)).toBe(2 + 11 + 5);
  });

  it("counts a key's child runs and its latest record in the summary", () => {
    const clock = new ManualClock();
    const store = open(clock);
    const start = clock.now();
    store.record(record({ atMs: start, runId: 'agent', principal: 'a', inputTokens: 10, childTokens: 5 }));
    store.record(
      record({ atMs: start + 40, runId: 'call', principal: 'a', inputTokens: 5, parentRunId: 'agent' }),
    );
    store.record(record({ atMs: start + 70, runId: 'other', principal: 'b', outcome: 'error' }));
    const byKey = store.summary({ by: 'key', sinceMs: 0 });
    expect(byKey.map((row) => [row.group, row.runs, row.childRuns, row.lastAtMs, row.inputTokens])).toEqual([
      ['a', 2, 1, start + 40, 15],
      ['b', 1, 0, start + 70, 0],
    ]);
  });

  it('keeps records and spent tokens across a close and reopen (edge restart), in WAL mode', async () => {
    const clock = new ManualClock();
    const first = open(clock);
    first.record(record({ atMs: clock.now(), principal: 'a', inputTokens: 60, outputTokens: 50 }));
    await first.close();
    const second = open(clock);
    expect(second.tokensSince('a', clock.now() - 1000)).toBe(110);
    expect(second.tokensSince('a', clock.now() + 1)).toBe(0);
    expect(second.tokensSince('b', 0)).toBe(0);
    const reader = openUsageDatabase(file).db;
    expect((reader.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode).toBe(
      'wal',
    );
    reader.close();
  });

  it('deletes records older than the retention at open and hourly', async () => {
    const clock = new ManualClock();
    const store = open(clock, { retentionDays: 1 });
    store.record(record({ atMs: clock.now() - 2 * 86_400_000, runId: 'old' }));
    store.record(record({ atMs: clock.now(), runId: 'new' }));
    store.flush();
    clock.advance(3_600_000);
    expect(store.summary({ by: 'key', sinceMs: 0 })[0]?.runs).toBe(1);
    await store.close();
    expect(clock.pending).toBe(0);
  });

  it('commits a full batch a slice per turn of the event loop, a read commits the rest at once', () => {
    const clock = new ManualClock();
    let commits = 0;
    const store = new UsageStore({
      db: openUsageDatabase(file).db,
      clock,
      logger: silentLogger,
      retentionDays: 30,
      batchSize: 120,
      flushIntervalMs: 1000,
      checkpointer: { committed: () => (commits += 1), close: () => Promise.resolve() },
    });
    stores.push(store);
    for (let index = 0; index < 120; index += 1)
      store.record(record({ atMs: clock.now(), runId: `r${index}` }));
    expect(commits).toBe(0);
    clock.advance(0); // 50 + 50 + 20: three turns, three transactions
    expect(commits).toBe(3);
    for (let index = 0; index < 130; index += 1)
      store.record(record({ atMs: clock.now(), runId: `s${index}` }));
    expect(store.summary({ by: 'key', sinceMs: 0 })[0]?.runs).toBe(250); // the read writes all 130 in one
    expect(commits).toBe(4);
    clock.advance(1000);
    expect(commits).toBe(4); // nothing left for the timers
  });

  it('tells its checkpointer after each commit and closes it after the database (no checkpoint in the writer)', async () => {
    const clock = new ManualClock();
    const calls: string[] = [];
    const { db } = openUsageDatabase(file);
    const store = new UsageStore({
      db,
      clock,
      logger: silentLogger,
      retentionDays: 1,
      batchSize: 2,
      flushIntervalMs: 1000,
      checkpointer: {
        committed: () => calls.push('committed'),
        close: () => {
          calls.push(`close (database open: ${String((db as { open?: boolean }).open)})`);
          return Promise.resolve();
        },
      },
    });
    expect(calls).toEqual([]); // nothing to prune at open: no commit
    store.record(record({ atMs: clock.now() }));
    store.flush();
    store.flush(); // nothing buffered: no commit
    store.record(record({ atMs: clock.now() }));
    store.record(record({ atMs: clock.now() })); // full batch: written on the next turn
    expect(calls).toEqual(['committed']);
    clock.advance(0);
    expect(calls).toEqual(['committed', 'committed']);
    clock.advance(2 * 86_400_000); // the hourly prune deletes the three records: a commit
    expect(calls).toEqual(['committed', 'committed', 'committed']);
    expect(store.prune()).toBe(0); // nothing deleted: no commit
    await store.close();
    await store.close();
    expect(calls.at(-1)).toBe('close (database open: false)');
    expect(calls).toHaveLength(4);
  });
});
