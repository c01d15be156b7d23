import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { HistoryError } from './history-error.js';
import { startHistoryWriterThread, type HistoryWriterThread } from './history-writer-thread.js';
import { INTERRUPTED_DETAIL, SqliteRunHistory, type HistoryWriteFailure } from './sqlite-run-history.js';
import type { RunStartRecord } from './run-history.js';
import { betterSqliteDriver, type SqliteDriver } from './sqlite-driver.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const supportDir = path.resolve(here, '../../test/support');

/** Lets the end-of-turn commit of queued run starts/ends run. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function start(runId: string, startedAt: number): RunStartRecord {
  return {
    runId,
    adapter: 'cli',
    target: 'fake-cli',
    sessionId: 'default',
    providerId: '',
    background: false,
    startedAt,
  };
}

/** better-sqlite3, counting the transactions begun. */
function countingDriver(): { driver: SqliteDriver; transactions: () => number } {
  let begun = 0;
  const driver: SqliteDriver = {
    backend: betterSqliteDriver.backend,
    open(file, readonly) {
      const db = betterSqliteDriver.open(file, readonly);
      return {
        exec: (sql) => db.exec(sql),
        close: () => db.close(),
        prepare(sql) {
          const statement = db.prepare(sql);
          if (!/^\s*BEGIN/i.test(sql)) return statement;
          return {
            run: (...parameters) => {
              begun += 1;
              return statement.run(...parameters);
            },
            all: (...parameters) => statement.all(...parameters),
            get: (...parameters) => statement.get(...parameters),
          };
        },
      };
    },
  };
  return { driver, transactions: () => begun };
}

describe('SqliteRunHistory', () => {
  let dir: string;
  let databasePath: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-history-'));
    databasePath = path.join(dir, 'nested', 'history.db');
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('records a run with its events, outcome and usage, in WAL mode', async () => {
    const history = SqliteRunHistory.open({ path: databasePath });
    expect(history.journalMode()).toBe('wal');
    history.recordStart(start('run-1', 1000));
    history.appendEvent({
      runId: 'run-1',
      seq: 1,
      type: 'start',
      payload: { sessionId: 'default' },
      at: 1001,
    });
    history.appendEvent({ runId: 'run-1', seq: 2, type: 'text-delta', payload: { text: 'hi' }, at: 1002 });
    expect(history.list()[0]).toMatchObject({ runId: 'run-1', status: 'running', endedAt: null });
    history.finish('run-1', {
      status: 'completed',
      endedAt: 1500,
      detail: 'idle-timeout',
      usage: {
        promptTokens: 3,
        completionTokens: 4,
        totalTokens: 7,
        reasoningTokens: 0,
        cachedTokens: 0,
        costUsd: 0,
      },
    });
    const [run] = history.list();
    expect(run).toMatchObject({
      runId: 'run-1',
      status: 'completed',
      startedAt: 1000,
      endedAt: 1500,
      detail: 'idle-timeout',
      eventCount: 2,
      errorCode: null,
    });
    expect(run?.usage?.totalTokens).toBe(7);
    expect(history.events('run-1').map((event) => [event.seq, event.type, event.payload])).toEqual([
      [1, 'start', { sessionId: 'default' }],
      [2, 'text-delta', { text: 'hi' }],
    ]);
    await history.close();
  });

  it('batches event writes: nothing is written before a flush trigger, a full batch writes at once', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, batchSize: 3, flushIntervalMs: 60_000 });
    const reader = () => new Database(databasePath, { readonly: true });
    history.recordStart(start('run-1', 1));
    history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: {}, at: 1 });
    history.appendEvent({ runId: 'run-1', seq: 2, type: 'text-delta', payload: {}, at: 1 });
    const count = () => {
      const db = reader();
      try {
        return (db.prepare('SELECT COUNT(*) AS n FROM run_events').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    expect(count()).toBe(0);
    history.appendEvent({ runId: 'run-1', seq: 3, type: 'text-delta', payload: {}, at: 1 });
    // The full batch is committed at once: posted to the writer thread now, answered within a few ms.
    await history.whenCommitted();
    expect(count()).toBe(3);
    history.appendEvent({ runId: 'run-1', seq: 4, type: 'complete', payload: {}, at: 1 });
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    history.flush();
    expect(count()).toBe(4);
    await history.close();
  });

  it('commits the starts, events and ends of every run of one event-loop turn in one transaction', async () => {
    const counted = countingDriver();
    const history = SqliteRunHistory.open({ path: databasePath, flushIntervalMs: 60_000 }, counted.driver);
    const outside = () => {
      const db = new Database(databasePath, { readonly: true });
      try {
        return db.prepare('SELECT id, status FROM runs ORDER BY id').all() as {
          id: string;
          status: string;
        }[];
      } finally {
        db.close();
      }
    };
    const before = counted.transactions();
    for (let index = 1; index <= 5; index += 1) {
      history.recordStart(start(`run-${index}`, index));
      history.appendEvent({
        runId: `run-${index}`,
        seq: 1,
        type: 'text-delta',
        payload: { index },
        at: index,
      });
      if (index % 2 === 1)
        history.finish(`run-${index}`, { status: 'completed', endedAt: 9, detail: 'stop' });
    }
    // Nothing is written during the turn that recorded it.
    expect(outside()).toEqual([]);
    expect(history.pendingRuns).toBe(8);
    await nextTurn();
    expect(counted.transactions() - before).toBe(1);
    expect(history.pendingRuns).toBe(0);
    expect(history.pendingEvents).toBe(0);
    expect(outside()).toEqual([
      { id: 'run-1', status: 'completed' },
      { id: 'run-2', status: 'running' },
      { id: 'run-3', status: 'completed' },
      { id: 'run-4', status: 'running' },
      { id: 'run-5', status: 'completed' },
    ]);
    expect(history.events('run-4').map((event) => event.payload)).toEqual([{ index: 4 }]);
    await history.close();
  });

  it('commits run starts and ends at most every commitIntervalMs, each turn when idle longer', async () => {
    const counted = countingDriver();
    const history = SqliteRunHistory.open(
      { path: databasePath, flushIntervalMs: 60_000, commitIntervalMs: 150 },
      counted.driver,
    );
    const before = counted.transactions();
    history.recordStart(start('run-1', 1));
    await nextTurn();
    // The first commit after a quiet spell is not delayed.
    expect(counted.transactions() - before).toBe(1);
    const committedAt = performance.now();
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    history.recordStart(start('run-2', 3));
    await nextTurn();
    history.finish('run-2', { status: 'completed', endedAt: 4, detail: 'stop' });
    await nextTurn();
    expect(counted.transactions() - before).toBe(1);
    expect(history.pendingRuns).toBe(3);
    while (history.pendingRuns > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // One commit for everything recorded within the interval, once the interval had passed.
    expect(performance.now() - committedAt).toBeGreaterThanOrEqual(145);
    expect(counted.transactions() - before).toBe(2);
    expect(history.list().map((run) => [run.runId, run.status])).toEqual([
      ['run-2', 'completed'],
      ['run-1', 'completed'],
    ]);
    await history.close();
  });

  it('reads through the same object see writes not committed yet', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, flushIntervalMs: 60_000 });
    history.recordStart(start('run-1', 1));
    history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: { text: 'a' }, at: 1 });
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    expect(history.list()[0]).toMatchObject({ runId: 'run-1', status: 'completed', eventCount: 1 });
    expect(history.events('run-1')).toHaveLength(1);
    await history.close();
  });

  it('flushes pending events after flushIntervalMs', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, batchSize: 100, flushIntervalMs: 10 });
    history.recordStart(start('run-1', 1));
    history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: {}, at: 1 });
    const deadline = Date.now() + 2000;
    const db = new Database(databasePath, { readonly: true });
    let count = 0;
    while (Date.now() < deadline && count === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      count = (db.prepare('SELECT COUNT(*) AS n FROM run_events').get() as { n: number }).n;
    }
    db.close();
    expect(count).toBe(1);
    await history.close();
  });

  it('marks runs left running by a crashed process as interrupted on open', async () => {
    const first = SqliteRunHistory.open({ path: databasePath });
    first.recordStart(start('finished', 1));
    first.finish('finished', { status: 'completed', endedAt: 2, detail: 'stop' });
    first.recordStart(start('in-flight', 3));
    await nextTurn();
    await first.whenCommitted();
    // Simulated crash: the process goes away without finish() or close().
    const second = SqliteRunHistory.open({ path: databasePath, now: () => 9999 });
    expect(second.recoveredRuns).toBe(1);
    const runs = second.list();
    expect(runs.find((run) => run.runId === 'in-flight')).toMatchObject({
      status: 'interrupted',
      endedAt: 9999,
      detail: INTERRUPTED_DETAIL,
    });
    expect(runs.find((run) => run.runId === 'finished')?.status).toBe('completed');
    await second.close();
    await first.close();
  });

  it('keeps only the newest retainRuns finished runs and deletes the events of pruned runs', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, retainRuns: 3 });
    history.recordStart(start('running-old', 0));
    for (let index = 1; index <= 6; index += 1) {
      const runId = `run-${index}`;
      history.recordStart(start(runId, index * 10));
      history.appendEvent({ runId, seq: 1, type: 'text-delta', payload: { index }, at: index });
      history.finish(runId, { status: 'completed', endedAt: index * 10 + 1, detail: 'stop' });
    }
    const ids = history.list({ limit: 100 }).map((run) => run.runId);
    expect(ids).toEqual(['run-6', 'run-5', 'run-4', 'running-old']);
    expect(history.events('run-1')).toEqual([]);
    expect(history.events('run-6')).toHaveLength(1);
    await history.close();
  });

  it('keeps exactly retainRuns finished runs when their start times tie (the last recorded are the newest)', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, retainRuns: 3 });
    history.recordStart(start('running-tied', 100));
    for (let index = 1; index <= 6; index += 1) {
      history.recordStart(start(`run-${index}`, 100));
      history.finish(`run-${index}`, { status: 'completed', endedAt: 101, detail: 'stop' });
    }
    const ids = history.list({ limit: 100 }).map((run) => run.runId);
    expect(ids.sort()).toEqual(['run-4', 'run-5', 'run-6', 'running-tied']);
    await history.close();
  });

  it('applies retention once per tenth of retainRuns finishes on large histories, exact at each pass', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, retainRuns: 30 });
    const finished = () => history.list({ limit: 1000 }).length;
    for (let index = 1; index <= 35; index += 1) {
      history.recordStart(start(`run-${index}`, index));
      history.finish(`run-${index}`, { status: 'completed', endedAt: index + 1, detail: 'stop' });
      // Passes run every 3 finishes (30 / 10): at most 2 runs over the bound in between.
      expect(finished()).toBeLessThanOrEqual(32);
    }
    // The 33rd finish ran a pass (kept 30); the 34th and 35th are extra until the next one.
    expect(finished()).toBe(32);
    history.recordStart(start('run-36', 36));
    history.finish('run-36', { status: 'completed', endedAt: 37, detail: 'stop' });
    const ids = history.list({ limit: 1000 }).map((run) => run.runId);
    expect(ids).toHaveLength(30);
    expect(ids[0]).toBe('run-36');
    expect(ids.at(-1)).toBe('run-7');
    await history.close();
  });

  it('writes a run that starts and ends in one commit as one ended row, restarts included', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, flushIntervalMs: 60_000 });
    const usage = {
      promptTokens: 1,
      completionTokens: 2,
      totalTokens: 3,
      reasoningTokens: 0,
      cachedTokens: 0,
      costUsd: 0,
    };
    // Committed earlier: run-2 exists when its retry starts and ends within the next commit.
    history.recordStart(start('run-2', 1));
    history.appendEvent({ runId: 'run-2', seq: 1, type: 'text-delta', payload: { text: 'old' }, at: 1 });
    history.flush();
    history.recordStart(start('run-1', 10));
    history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: { text: 'a' }, at: 11 });
    history.finish('run-1', { status: 'completed', endedAt: 12, detail: 'stop', usage });
    history.recordStart(start('run-2', 20));
    history.appendEvent({ runId: 'run-2', seq: 1, type: 'text-delta', payload: { text: 'new' }, at: 21 });
    history.finish('run-2', {
      status: 'error',
      endedAt: 22,
      detail: '',
      errorCode: 'x',
      errorMessage: 'boom',
    });
    // run-3 ends, then starts over within the same commit.
    history.recordStart(start('run-3', 30));
    history.finish('run-3', { status: 'cancelled', endedAt: 31, detail: 'gone' });
    history.recordStart(start('run-3', 32));
    history.appendEvent({ runId: 'run-3', seq: 1, type: 'text-delta', payload: { text: 'again' }, at: 33 });
    history.flush();
    const runs = new Map(history.list({ limit: 10 }).map((run) => [run.runId, run]));
    expect(runs.get('run-1')).toMatchObject({
      status: 'completed',
      startedAt: 10,
      endedAt: 12,
      eventCount: 1,
    });
    expect(runs.get('run-1')?.usage?.totalTokens).toBe(3);
    expect(runs.get('run-2')).toMatchObject({
      status: 'error',
      startedAt: 20,
      endedAt: 22,
      errorCode: 'x',
      errorMessage: 'boom',
      eventCount: 1,
    });
    expect(history.events('run-2').map((event) => event.payload)).toEqual([{ text: 'new' }]);
    expect(runs.get('run-3')).toMatchObject({
      status: 'running',
      startedAt: 32,
      endedAt: null,
      eventCount: 1,
    });
    await history.close();
  });

  it("writes the events of a run committed whole inside its row, and reads every run's events back in order", async () => {
    const history = SqliteRunHistory.open({ path: databasePath, flushIntervalMs: 60_000 });
    // run-a: start, events and end in one commit.
    history.recordStart(start('run-a', 10));
    for (const [seq, text] of [
      [1, 'x'],
      [2, 'y'],
      [3, 'z'],
    ] as const) {
      history.appendEvent({ runId: 'run-a', seq, type: 'text-delta', payload: { text }, at: 10 + seq });
    }
    history.finish('run-a', { status: 'completed', endedAt: 14, detail: 'stop' });
    // run-b: its end comes in a later commit than its start and first event.
    history.recordStart(start('run-b', 20));
    history.appendEvent({ runId: 'run-b', seq: 1, type: 'text-delta', payload: { text: 'first' }, at: 21 });
    history.flush();
    history.appendEvent({ runId: 'run-b', seq: 2, type: 'text-delta', payload: { text: 'second' }, at: 22 });
    history.finish('run-b', { status: 'completed', endedAt: 23, detail: 'stop' });
    // run-c: a repeated seq within one commit (the later event replaces the earlier, as a row does).
    history.recordStart(start('run-c', 30));
    history.appendEvent({ runId: 'run-c', seq: 1, type: 'text-delta', payload: { text: 'draft' }, at: 31 });
    history.appendEvent({ runId: 'run-c', seq: 1, type: 'text-delta', payload: { text: 'final' }, at: 32 });
    history.finish('run-c', { status: 'completed', endedAt: 33, detail: 'stop' });
    history.flush();

    const raw = new Database(databasePath, { readonly: true });
    const rowsOf = (runId: string) =>
      (raw.prepare('SELECT COUNT(*) AS n FROM run_events WHERE run_id = ?').get(runId) as { n: number }).n;
    const inlineOf = (runId: string) =>
      (raw.prepare('SELECT events_json FROM runs WHERE id = ?').get(runId) as { events_json: string | null })
        .events_json;
    expect([rowsOf('run-a'), rowsOf('run-b'), rowsOf('run-c')]).toEqual([0, 2, 1]);
    expect(JSON.parse(inlineOf('run-a') ?? 'null')).toHaveLength(3);
    expect([inlineOf('run-b'), inlineOf('run-c')]).toEqual([null, null]);
    raw.close();

    expect(history.events('run-a')).toEqual([
      { runId: 'run-a', seq: 1, type: 'text-delta', payload: { text: 'x' }, at: 11 },
      { runId: 'run-a', seq: 2, type: 'text-delta', payload: { text: 'y' }, at: 12 },
      { runId: 'run-a', seq: 3, type: 'text-delta', payload: { text: 'z' }, at: 13 },
    ]);
    expect(history.events('run-b').map((event) => event.payload)).toEqual([
      { text: 'first' },
      { text: 'second' },
    ]);
    expect(history.events('run-c').map((event) => event.payload)).toEqual([{ text: 'final' }]);
    const counts = Object.fromEntries(history.list().map((run) => [run.runId, run.eventCount]));
    expect(counts).toEqual({ 'run-a': 3, 'run-b': 2, 'run-c': 1 });
    await history.close();
  });

  it('opens a schema 1 database: read-only as it is, writable by adding events_json, its runs kept', async () => {
    fs.mkdirSync(path.dirname(databasePath), { recursive: true });
    const old = new Database(databasePath);
    old.exec(`CREATE TABLE runs (id TEXT PRIMARY KEY, adapter TEXT NOT NULL, target TEXT NOT NULL,
        session_id TEXT NOT NULL, provider_id TEXT NOT NULL DEFAULT '', background INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER, detail TEXT NOT NULL DEFAULT '',
        error_code TEXT, error_message TEXT, usage_json TEXT);
      CREATE INDEX runs_by_start ON runs(started_at);
      CREATE TABLE run_events (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
        type TEXT NOT NULL, payload_json TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (run_id, seq));
      INSERT INTO runs (id, adapter, target, session_id, status, started_at, ended_at, detail)
        VALUES ('old-run', 'cli', 'fake-cli', 'default', 'completed', 1, 2, 'stop');
      INSERT INTO run_events VALUES ('old-run', 1, 'text-delta', '{"text":"kept"}', 1);
      PRAGMA user_version = 1;`);
    old.close();

    const reader = SqliteRunHistory.open({ path: databasePath, readonly: true });
    expect(reader.list()).toMatchObject([{ runId: 'old-run', eventCount: 1 }]);
    expect(reader.events('old-run').map((event) => event.payload)).toEqual([{ text: 'kept' }]);
    await reader.close();

    const history = SqliteRunHistory.open({ path: databasePath });
    history.recordStart(start('new-run', 5));
    history.appendEvent({ runId: 'new-run', seq: 1, type: 'text-delta', payload: { text: 'new' }, at: 6 });
    history.finish('new-run', { status: 'completed', endedAt: 7, detail: 'stop' });
    expect(history.list().map((run) => [run.runId, run.eventCount])).toEqual([
      ['new-run', 1],
      ['old-run', 1],
    ]);
    expect(history.events('old-run').map((event) => event.payload)).toEqual([{ text: 'kept' }]);
    expect(history.events('new-run').map((event) => event.payload)).toEqual([{ text: 'new' }]);
    await history.close();
    const migrated = new Database(databasePath, { readonly: true });
    expect(migrated.pragma('user_version', { simple: true })).toBe(3);
    migrated.close();
  });

  it('reads a schema 2 error outcome (`failed`) as `error`: read-only as stored, writable by migrating the rows', async () => {
    fs.mkdirSync(path.dirname(databasePath), { recursive: true });
    const old = new Database(databasePath);
    old.exec(`CREATE TABLE runs (id TEXT PRIMARY KEY, adapter TEXT NOT NULL, target TEXT NOT NULL,
        session_id TEXT NOT NULL, provider_id TEXT NOT NULL DEFAULT '', background INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER, detail TEXT NOT NULL DEFAULT '',
        error_code TEXT, error_message TEXT, usage_json TEXT, events_json TEXT);
      CREATE INDEX runs_by_start ON runs(started_at);
      CREATE TABLE run_events (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
        type TEXT NOT NULL, payload_json TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (run_id, seq));
      INSERT INTO runs (id, adapter, target, session_id, status, started_at, ended_at, detail, error_code,
          error_message)
        VALUES ('broken', 'ollama', 'llama3', 's', 'failed', 1, 2, '', 'node_busy', 'busy'),
               ('fine', 'cli', 'fake-cli', 'default', 'completed', 3, 4, 'stop', NULL, NULL),
               ('stopped', 'cli', 'fake-cli', 'default', 'cancelled', 5, 6, 'client gone', NULL, NULL);
      PRAGMA user_version = 2;`);
    old.close();
    const stored = () => {
      const raw = new Database(databasePath, { readonly: true });
      try {
        return {
          version: raw.pragma('user_version', { simple: true }),
          statuses: raw.prepare('SELECT id, status FROM runs ORDER BY id').all(),
        };
      } finally {
        raw.close();
      }
    };
    const expected = { broken: 'error', fine: 'completed', stopped: 'cancelled' };

    const reader = SqliteRunHistory.open({ path: databasePath, readonly: true });
    expect(Object.fromEntries(reader.list().map((run) => [run.runId, run.status]))).toEqual(expected);
    await reader.close();
    expect(stored().version).toBe(2);
    expect(stored().statuses).toContainEqual({ id: 'broken', status: 'failed' });

    const history = SqliteRunHistory.open({ path: databasePath });
    expect(Object.fromEntries(history.list().map((run) => [run.runId, run.status]))).toEqual(expected);
    expect(history.list().find((run) => run.runId === 'broken')).toMatchObject({
      errorCode: 'node_busy',
      errorMessage: 'busy',
      endedAt: 2,
    });
    await history.close();
    expect(stored()).toEqual({
      version: 3,
      statuses: [
        { id: 'broken', status: 'error' },
        { id: 'fine', status: 'completed' },
        { id: 'stopped', status: 'cancelled' },
      ],
    });
  });

  it.each([
    ['on the event loop', false],
    ['on the writer thread', true],
  ])(
    'ends a run started twice in one commit, with the events after its second start (%s)',
    async (_, thread) => {
      const history = SqliteRunHistory.open({ path: databasePath, writerThread: thread });
      history.recordStart(start('run-1', 1));
      history.appendEvent({
        runId: 'run-1',
        seq: 1,
        type: 'text-delta',
        payload: { text: 'first try' },
        at: 1,
      });
      history.recordStart(start('run-1', 2)); // an edge retry before the first try ended
      history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: { text: 'retry' }, at: 2 });
      history.finish('run-1', { status: 'completed', endedAt: 3, detail: 'stop' });
      expect(history.list()).toMatchObject([
        { runId: 'run-1', status: 'completed', startedAt: 2, eventCount: 1 },
      ]);
      expect(history.events('run-1').map((event) => event.payload)).toEqual([{ text: 'retry' }]);
      await history.close();
    },
  );

  it('starts a repeated run id over, dropping its old events', async () => {
    const history = SqliteRunHistory.open({ path: databasePath });
    history.recordStart(start('run-1', 1));
    history.appendEvent({ runId: 'run-1', seq: 1, type: 'text-delta', payload: { text: 'old' }, at: 1 });
    history.finish('run-1', {
      status: 'error',
      endedAt: 2,
      detail: '',
      errorCode: 'x',
      errorMessage: 'boom',
    });
    history.recordStart(start('run-1', 5));
    expect(history.list()).toHaveLength(1);
    expect(history.list()[0]).toMatchObject({ status: 'running', errorCode: null, eventCount: 0 });
    await history.close();
  });

  it('read-only opening neither recovers nor writes, and refuses a missing file with open_failed', async () => {
    const writer = SqliteRunHistory.open({ path: databasePath });
    writer.recordStart(start('live', 1));
    await nextTurn();
    await writer.whenCommitted();
    const reader = SqliteRunHistory.open({ path: databasePath, readonly: true });
    expect(reader.recoveredRuns).toBe(0);
    expect(reader.list()[0]?.status).toBe('running');
    expect(() => reader.recordStart(start('x', 1))).toThrow(HistoryError);
    await reader.close();
    await writer.close();
    expect(() => SqliteRunHistory.open({ path: path.join(dir, 'missing.db'), readonly: true })).toThrow(
      expect.objectContaining({ code: 'open_failed' }),
    );
  });

  it('rejects use after close with code closed, and close is idempotent', async () => {
    const history = SqliteRunHistory.open({ path: databasePath });
    await history.close();
    await history.close();
    expect(() => history.list()).toThrow(expect.objectContaining({ code: 'closed' }));
  });

  it('survives SIGKILL of a writing process: the database is intact and the run becomes interrupted', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        path.join(supportDir, 'register-ts.mjs'),
        path.join(supportDir, 'history-crash-child.ts'),
        databasePath,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child not ready: ${stderr}`)), 15_000);
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', () => reject(new Error(`child exited early: ${stderr}`)));
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const check = new Database(databasePath);
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
    const history = SqliteRunHistory.open({ path: databasePath, retainRuns: 1_000_000 });
    const runs = history.list({ limit: 1_000_000 });
    const run = runs.find((candidate) => candidate.runId === 'crash-run');
    expect(run).toMatchObject({ runId: 'crash-run', status: 'interrupted' });
    // Run starts and ends commit in order, whole: the short runs found are turn-1..turn-k, each ended with its
    // event, and at least the turns before `ready`. Only the newest may have been cut after its start: a full
    // event batch (its own event) committed the start, and the kill came before the commit of its end.
    const turns = runs
      .filter((candidate) => candidate.runId.startsWith('turn-'))
      .sort((a, b) => Number(a.runId.slice(5)) - Number(b.runId.slice(5)));
    expect(turns.length).toBeGreaterThanOrEqual(7);
    expect(turns.map((candidate) => candidate.runId)).toEqual(
      Array.from({ length: turns.length }, (_, index) => `turn-${index + 1}`),
    );
    for (const turn of turns.slice(0, -1)) expect(turn).toMatchObject({ status: 'completed', eventCount: 1 });
    const newest = turns[turns.length - 1];
    expect(['completed', 'interrupted']).toContain(newest?.status);
    expect(newest?.eventCount).toBe(1);
    expect(history.recoveredRuns).toBe(newest?.status === 'interrupted' ? 2 : 1);
    expect(run?.eventCount).toBeGreaterThanOrEqual(64);
    const seqs = history.events('crash-run').map((event) => event.seq);
    // Batches commit whole: the surviving events are exactly 1..n without gaps.
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => index + 1));
    await history.close();
  });

  it('tells its checkpointer after each commit and closes it after the writer thread (no checkpoint in the writer)', async () => {
    const calls: string[] = [];
    const history = SqliteRunHistory.open({
      path: databasePath,
      startWriterThread: (options, events) => {
        const thread = startHistoryWriterThread(options, events);
        return {
          ...thread,
          close: async () => {
            await thread.close();
            calls.push('writer thread closed');
          },
        };
      },
      startCheckpointer: (options) => {
        expect(options.file).toBe(databasePath);
        expect(options.engine).toBe('better-sqlite3');
        return {
          committed: () => calls.push('committed'),
          close: () => {
            calls.push('checkpointer closed');
            return Promise.resolve();
          },
        };
      },
    });
    const afterOpen = calls.length; // the retention pass at open
    history.recordStart(start('run-1', 1));
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    expect(calls).toHaveLength(afterOpen);
    await nextTurn();
    await history.whenCommitted();
    expect(calls).toHaveLength(afterOpen + 1);
    history.flush(); // nothing queued: no commit
    expect(calls).toHaveLength(afterOpen + 1);
    await history.close();
    await history.close();
    // The writer thread's connection is gone before the last checkpoint.
    expect(calls.slice(afterOpen + 1)).toEqual(['writer thread closed', 'checkpointer closed']);
  });
});

describe('SqliteRunHistory on its writer thread', () => {
  let dir: string;
  let databasePath: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-history-thread-'));
    databasePath = path.join(dir, 'history.db');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const rowCount = (): number => {
    const db = new Database(databasePath, { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  it('commits in the background without a read, and the commit is on the thread, not the event loop', async () => {
    const counted = countingDriver();
    // The counting driver is not one the thread can open: with it, commits stay on the event loop.
    const onLoop = SqliteRunHistory.open({ path: path.join(dir, 'loop.db') }, counted.driver);
    onLoop.recordStart(start('run-1', 1));
    await nextTurn();
    expect(counted.transactions()).toBe(1);
    await onLoop.close();

    const history = SqliteRunHistory.open({ path: databasePath });
    history.recordStart(start('run-1', 1));
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    expect(history.pendingRuns).toBe(2);
    await history.whenCommitted();
    expect(history.pendingRuns).toBe(0);
    expect(rowCount()).toBe(1);
    await history.close();
  });

  it('retries a commit the thread could not write, before anything recorded after it, and reports it', async () => {
    const failures: HistoryWriteFailure[] = [];
    const history = SqliteRunHistory.open({
      path: databasePath,
      flushIntervalMs: 10,
      onWriteFailure: (failure) => failures.push(failure),
    });
    // A real failure inside SQLite on the thread's connection: every insert into runs aborts while `broken` exists.
    const admin = new Database(databasePath);
    admin.exec(`CREATE TABLE broken (x INTEGER);
      CREATE TRIGGER fail_runs BEFORE INSERT ON runs WHEN EXISTS (SELECT 1 FROM broken)
      BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END;
      INSERT INTO broken VALUES (1);`);
    history.recordStart(start('first', 1));
    history.finish('first', { status: 'completed', endedAt: 2, detail: 'stop' });
    await waitFor(() => failures.length > 0);
    expect(failures[0]).toMatchObject({ error: expect.stringContaining('disk full (test)'), pendingRuns: 2 });
    expect(() => history.flush()).toThrow(expect.objectContaining({ code: 'write_failed' }));
    history.recordStart(start('second', 3));
    expect(history.pendingRuns).toBe(3);
    admin.exec('DELETE FROM broken');
    await waitFor(() => history.pendingRuns === 0);
    admin.close();
    expect(history.list().map((run) => [run.runId, run.status])).toEqual([
      ['second', 'running'],
      ['first', 'completed'],
    ]);
    await history.close();
  });

  it('waits for a thread that falls behind instead of dropping writes (a burst that never yields)', async () => {
    const history = SqliteRunHistory.open({ path: databasePath, batchSize: 10, maxPendingEvents: 100 });
    history.recordStart(start('burst', 1));
    for (let seq = 1; seq <= 1000; seq += 1) {
      history.appendEvent({ runId: 'burst', seq, type: 'text-delta', payload: { seq }, at: seq });
    }
    history.finish('burst', { status: 'completed', endedAt: 2, detail: 'stop' });
    expect(history.droppedEvents).toBe(0);
    expect(history.pendingEvents).toBeLessThanOrEqual(100);
    expect(history.list()).toMatchObject([{ runId: 'burst', status: 'completed', eventCount: 1000 }]);
    await history.close();
  });

  it('commits on the event loop when the thread cannot start, and says so', async () => {
    const failures: unknown[] = [];
    const history = SqliteRunHistory.open({
      path: databasePath,
      startWriterThread: () => {
        throw new Error('no threads here');
      },
      onWriterThreadFailure: (error) => failures.push(error),
    });
    expect(failures).toEqual([new Error('no threads here')]);
    history.recordStart(start('run-1', 1));
    await nextTurn();
    expect(rowCount()).toBe(1);
    await history.close();
  });

  it('goes back to the event loop when the thread dies, and writes the commit it had not answered', async () => {
    const failures: unknown[] = [];
    let fail: ((error: Error) => void) | undefined;
    const history = SqliteRunHistory.open({
      path: databasePath,
      // A thread that takes commits and never answers them, then dies.
      startWriterThread: (_options, events) => {
        fail = events.onFailure;
        return silentThread();
      },
      onWriterThreadFailure: (error) => failures.push(error),
    });
    history.recordStart(start('run-1', 1));
    history.finish('run-1', { status: 'completed', endedAt: 2, detail: 'stop' });
    await nextTurn();
    expect(history.pendingRuns).toBe(2);
    expect(rowCount()).toBe(0);
    fail?.(new Error('history writer thread exited with code 1'));
    expect(failures).toHaveLength(1);
    await history.whenCommitted();
    expect(history.list()).toMatchObject([{ runId: 'run-1', status: 'completed' }]);
    await history.close();
  });

  it('does not wait forever for a thread that stops answering: a read commits on the event loop', async () => {
    const failures: unknown[] = [];
    const history = SqliteRunHistory.open({
      path: databasePath,
      startWriterThread: silentThread,
      onWriterThreadFailure: (error) => failures.push(error),
    });
    history.recordStart(start('run-1', 1));
    await nextTurn();
    expect(history.list()).toMatchObject([{ runId: 'run-1', status: 'running' }]);
    expect(String(failures[0])).toContain('did not answer');
    await history.close();
  });
});

/** A writer thread that takes every commit and never answers. */
function silentThread(): HistoryWriterThread {
  return {
    commit: () => 1,
    exec: () => undefined,
    waitFor: () => undefined,
    close: () => Promise.resolve(),
  };
}

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
