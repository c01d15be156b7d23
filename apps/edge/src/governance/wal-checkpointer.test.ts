import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger, type Logger } from '../logging.js';
import { openUsageDatabase, type SqlDatabase } from './usage-database.js';
import {
  DEFAULT_AUTOCHECKPOINT_PAGES,
  startWalCheckpointer,
  type CheckpointResult,
} from './wal-checkpointer.js';

function autocheckpoint(db: SqlDatabase): number {
  const row = db.prepare('PRAGMA wal_autocheckpoint').get() as Record<string, number>;
  return Number(Object.values(row)[0]);
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
  let db: SqlDatabase;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-wal-'));
    file = path.join(dir, 'usage.db');
    db = openUsageDatabase(file).db;
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  });
  afterEach(() => {
    try {
      db.close();
    } catch {
      // closed by the test
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function commit(rows: number): void {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    db.exec('BEGIN');
    for (let row = 0; row < rows; row += 1) insert.run('x'.repeat(200));
    db.exec('COMMIT');
  }

  it('turns the writer’s automatic checkpoint off and checkpoints every committed frame in the worker', async () => {
    const results: CheckpointResult[] = [];
    const checkpointer = startWalCheckpointer({
      db,
      file,
      engine: 'better-sqlite3',
      logger: silentLogger,
      onCheckpoint: (result) => results.push(result),
      intervalMs: 50,
    });
    expect(autocheckpoint(db)).toBe(0);
    for (let batch = 0; batch < 20; batch += 1) {
      commit(200);
      checkpointer.committed();
    }
    // 20 commits within one interval: one checkpoint, of every frame, after the interval.
    expect(results).toEqual([]);
    await until(() => results.length > 0, 'a checkpoint');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(results).toHaveLength(1);
    expect(results[0]?.busy).toBe(0);
    expect(results[0]?.log).toBeGreaterThan(0);
    expect(results[0]?.checkpointed).toBe(results[0]?.log);
    expect(autocheckpoint(db)).toBe(0);
    // Without a checkpoint in the writer, the frames committed after the worker's last pass stay in the WAL until
    // the worker's next one: the writer itself never copies them.
    db.close();
    const before = results.length;
    checkpointer.close();
    checkpointer.close();
    await until(() => results.length === before + 1, 'the last checkpoint');
    // The worker held the last connection: its close checkpointed and removed the WAL.
    await until(() => !fs.existsSync(`${file}-wal`), 'the WAL to be removed');
    const reopened = openUsageDatabase(file).db;
    expect(reopened.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 4000 });
    reopened.close();
  });

  it('gives the writer its automatic checkpoint back when the worker fails', async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      warn: (_fields: Record<string, unknown>, message: string) => warnings.push(message),
    };
    const checkpointer = startWalCheckpointer({
      db,
      file,
      engine: 'better-sqlite3',
      logger,
      betterSqlitePath: path.join(dir, 'no-such-module.js'),
    });
    await until(() => warnings.length > 0, 'the warning');
    expect(warnings).toEqual(['usage database checkpoint worker failed; checkpointing in the writer again']);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    checkpointer.committed();
    checkpointer.close();
  });
});
