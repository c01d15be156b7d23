import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import {
  DEFAULT_AUTOCHECKPOINT_PAGES,
  startWalCheckpointer,
  type CheckpointerFailure,
  type CheckpointResult,
} from './wal-checkpointer.js';

const betterSqlitePath = createRequire(import.meta.url).resolve('better-sqlite3');

function autocheckpoint(db: Database.Database): number {
  return Number(db.pragma('wal_autocheckpoint', { simple: true }));
}

function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (predicate()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

describe('startWalCheckpointer', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-wal-'));
    file = path.join(dir, 'data.db');
    db = new Database(file);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  });
  afterEach(() => {
    if (db.open) db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function commit(rows: number): void {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    db.transaction(() => {
      for (let row = 0; row < rows; row += 1) insert.run('x'.repeat(200));
    })();
  }

  it('turns the writer’s automatic checkpoint off and checkpoints every committed frame in the worker', async () => {
    const results: CheckpointResult[] = [];
    const checkpointer = startWalCheckpointer({
      db,
      file,
      engine: 'better-sqlite3',
      betterSqlitePath,
      onCheckpoint: (result) => results.push(result),
      intervalMs: 50,
    });
    expect(autocheckpoint(db)).toBe(0);
    for (let batch = 0; batch < 20; batch += 1) {
      commit(200);
      checkpointer.committed();
    }
    // 20 commits within one interval: one checkpoint, of every frame, after the interval (not one per commit:
    // each complete checkpoint makes the next commit restart the WAL, which fsyncs in the writer).
    expect(results).toEqual([]);
    await until(() => results.length > 0, 'a checkpoint');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(results).toHaveLength(1);
    expect(results[0]?.busy).toBe(0);
    expect(results[0]?.log).toBeGreaterThan(0);
    expect(results[0]?.checkpointed).toBe(results[0]?.log);
    expect(autocheckpoint(db)).toBe(0);
    db.close();
    const before = results.length;
    const closing = checkpointer.close();
    expect(checkpointer.close()).toBe(closing);
    await closing;
    // Resolved only once the worker is done: its last checkpoint is reported and, as it held the last
    // connection, its close checkpointed and removed the WAL (the files may be removed now).
    expect(results).toHaveLength(before + 1);
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const reopened = new Database(file);
    expect(reopened.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 4000 });
    reopened.close();
  });

  it('does not checkpoint while nothing was committed', async () => {
    const results: CheckpointResult[] = [];
    const checkpointer = startWalCheckpointer({
      db,
      file,
      engine: 'better-sqlite3',
      betterSqlitePath,
      onCheckpoint: (result) => results.push(result),
      intervalMs: 20,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(results).toEqual([]);
    await checkpointer.close();
  });

  it('gives the writer its automatic checkpoint back when the worker fails, and says so', async () => {
    const failures: CheckpointerFailure[] = [];
    const checkpointer = startWalCheckpointer({
      db,
      file,
      engine: 'better-sqlite3',
      betterSqlitePath: path.join(dir, 'no-such-module.js'),
      onFailure: (_error, when) => failures.push(when),
    });
    expect(autocheckpoint(db)).toBe(0);
    await until(() => failures.length > 0, 'the failure');
    expect(failures).toEqual(['worker']);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    checkpointer.committed();
    await checkpointer.close();
  });

  it('refuses a better-sqlite3 writer without the module’s path', () => {
    expect(() => startWalCheckpointer({ db, file, engine: 'better-sqlite3' })).toThrow(TypeError);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
  });
});
