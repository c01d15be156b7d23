import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import { SqliteRunRecordStore, RUN_DATABASE_FILE } from './sqlite-run-record-store.js';
import type { StoredRun } from './run-record-store.js';

const record = (id: string, createdAt: number, endedAt?: number): StoredRun => ({
  key: { principal: 'team', kind: 'a2a.task', id },
  state: { id, status: { state: endedAt ? 'completed' : 'working' } },
  createdAt,
  updatedAt: createdAt + 1,
  endedAt,
  edgeId: 'edge-a',
  boot: 'boot-1',
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('SqliteRunRecordStore', () => {
  it('keeps records across a reopen of the same data_dir, oldest first, replaced by key', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-runs-'));
    dirs.push(dir);
    const first = SqliteRunRecordStore.open(dir, silentLogger);
    first.save(record('b', 20));
    first.save(record('a', 10));
    first.save(record('a', 10, 15));
    first.save(record('gone', 30));
    first.remove({ principal: 'team', kind: 'a2a.task', id: 'gone' });
    await first.close();
    expect(fs.existsSync(path.join(dir, RUN_DATABASE_FILE))).toBe(true);

    const second = SqliteRunRecordStore.open(dir, silentLogger);
    expect(second.load()).toEqual([record('a', 10, 15), record('b', 20)]);
    await second.close();
  });

  it('drops a row whose key or JSON is unreadable instead of failing the load', async () => {
    const db = new Database(':memory:');
    const store = SqliteRunRecordStore.over(db, silentLogger);
    store.save(record('ok', 1));
    db.prepare(
      `INSERT INTO runs (kind, principal, id, state, created_ms, updated_ms, ended_ms, edge_id, boot)
       VALUES ('a2a.task', 'team', 'bad', '{not json', 2, 2, NULL, 'e', 'b'),
              ('no.such.kind', 'team', 'x', '{}', 3, 3, NULL, 'e', 'b')`,
    ).run();
    expect(store.load().map((loaded) => loaded.key.id)).toEqual(['ok']);
    expect(db.prepare('SELECT COUNT(*) AS n FROM runs').get()).toEqual({ n: 1 });
    await store.close();
  });

  it('opens a runs.db written before resume payloads existed, and keeps a payload from then on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-runs-'));
    dirs.push(dir);
    // The schema (and a row) exactly as the previous version wrote them.
    const old = new Database(path.join(dir, RUN_DATABASE_FILE));
    old.exec(`CREATE TABLE runs (
      kind TEXT NOT NULL, principal TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, ended_ms INTEGER,
      edge_id TEXT NOT NULL, boot TEXT NOT NULL, PRIMARY KEY (kind, principal, id))`);
    old
      .prepare(
        `INSERT INTO runs (kind, principal, id, state, created_ms, updated_ms, ended_ms, edge_id, boot)
         VALUES ('a2a.task', 'team', 'old', '{"id":"old","status":{"state":"working"}}', 5, 6, NULL, 'edge-a', 'boot-1')`,
      )
      .run();
    old.close();

    const store = SqliteRunRecordStore.open(dir, silentLogger);
    expect(store.load()).toEqual([
      { ...record('old', 5), state: { id: 'old', status: { state: 'working' } } },
    ]);
    store.save({ ...record('queued', 10), resume: { v: 1, submittedAtMs: 9 } });
    await store.close();

    const reopened = SqliteRunRecordStore.open(dir, silentLogger);
    expect(reopened.load()[1]).toEqual({ ...record('queued', 10), resume: { v: 1, submittedAtMs: 9 } });
    // Written as null again: no payload.
    reopened.save(record('queued', 10));
    expect(reopened.load()[1]).toEqual(record('queued', 10));
    await reopened.close();
  });

  it('reads a payload that no longer parses as none and keeps the run', async () => {
    const db = new Database(':memory:');
    const store = SqliteRunRecordStore.over(db, silentLogger);
    store.save({ ...record('q', 1), resume: { v: 1 } });
    db.prepare(`UPDATE runs SET resume = '{garbled' WHERE id = 'q'`).run();
    expect(store.load()).toEqual([record('q', 1)]);
    await store.close();
  });
});
