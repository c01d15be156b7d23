// A history whose writes start failing (disk full): memory stays bounded, drops are counted, failures are
// reported once per attempt with a growing backoff, and everything recovers when the disk has room again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { HistoryError } from './history-error.js';
import {
  betterSqliteDriver,
  type SqlDatabase,
  type SqliteDriver,
  type SqlStatement,
} from './sqlite-driver.js';
import { SqliteRunHistory, type HistoryWriteFailure } from './sqlite-run-history.js';

/** better-sqlite3 whose data-changing statements fail with SQLITE_FULL while `full` is set. */
function fillableDriver(state: { full: boolean }): SqliteDriver {
  const failIfFull = (sql: string) => {
    if (state.full && /^\s*(INSERT|UPDATE|DELETE)/i.test(sql))
      throw new Error('SQLITE_FULL: database or disk is full');
  };
  return {
    backend: betterSqliteDriver.backend,
    open(file, readonly) {
      const db = betterSqliteDriver.open(file, readonly);
      const wrapped: SqlDatabase = {
        exec: (sql) => db.exec(sql),
        close: () => db.close(),
        prepare(sql) {
          const statement = db.prepare(sql);
          const guarded: SqlStatement = {
            run: (...parameters) => {
              failIfFull(sql);
              return statement.run(...parameters);
            },
            all: (...parameters) => statement.all(...parameters),
            get: (...parameters) => statement.get(...parameters),
          };
          return guarded;
        },
      };
      return wrapped;
    },
  };
}

describe('SqliteRunHistory on a full disk', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-history-full-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps at most maxPendingEvents, counts drops, backs off and recovers', async () => {
    const state = { full: false };
    let now = 1_000;
    const failures: HistoryWriteFailure[] = [];
    const history = SqliteRunHistory.open(
      {
        path: path.join(dir, 'history.db'),
        batchSize: 4,
        flushIntervalMs: 10,
        maxPendingEvents: 20,
        now: () => now,
        onWriteFailure: (failure) => failures.push(failure),
      },
      fillableDriver(state),
    );
    try {
      history.recordStart({
        runId: 'r1',
        adapter: 'cli',
        target: 't',
        sessionId: 's',
        providerId: '',
        background: false,
        startedAt: now,
      });
      state.full = true;
      for (let seq = 1; seq <= 1000; seq += 1) {
        expect(() =>
          history.appendEvent({ runId: 'r1', seq, type: 'text-delta', payload: { seq }, at: now }),
        ).not.toThrow();
      }
      expect(history.pendingEvents).toBe(20);
      expect(history.droppedEvents).toBe(980);
      // One failed attempt, then the backoff holds further attempts (not one per event).
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ pendingEvents: 4, retryInMs: 10 });
      // A run's end waits with the events (the runner never hears of the disk); an explicit flush reports.
      history.finish('r1', { status: 'completed', endedAt: now, detail: 'done' });
      expect(history.pendingRuns).toBe(2);
      expect(() => history.flush()).toThrow(HistoryError);
      expect(failures.at(-1)).toMatchObject({ pendingRuns: 2, retryInMs: 20 });
      // Run starts and ends are bounded too.
      for (let index = 0; index < 30; index += 1)
        history.finish('r1', { status: 'completed', endedAt: now, detail: 'x' });
      expect(history.pendingRuns).toBe(20);
      expect(history.droppedRuns).toBe(12);
      state.full = false;
      now += 1_000;
      history.flush();
      expect(history.pendingEvents).toBe(0);
      expect(history.pendingRuns).toBe(0);
      expect(history.events('r1')).toHaveLength(20);
      expect(history.list()[0]).toMatchObject({
        runId: 'r1',
        status: 'completed',
        eventCount: 20,
        detail: 'x',
      });
    } finally {
      await history.close();
    }
  });
});
