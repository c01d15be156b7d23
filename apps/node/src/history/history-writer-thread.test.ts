// The writer thread on its own: commits in order with answers, and a thread that cannot open its file ends
// without leaving a synchronous wait hanging.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { HistoryStatement, type WriteOp } from './history-ops.js';
import { startHistoryWriterThread, type CommitAnswer } from './history-writer-thread.js';

const betterSqlitePath = createRequire(import.meta.url).resolve('better-sqlite3');

describe('startHistoryWriterThread', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-writer-thread-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('applies commits in order, each whole, and answers each (a failed one with its error)', async () => {
    const file = path.join(dir, 'h.db');
    const setup = new Database(file);
    setup.exec(`CREATE TABLE runs (id TEXT PRIMARY KEY, adapter TEXT NOT NULL, target TEXT NOT NULL,
      session_id TEXT NOT NULL, provider_id TEXT NOT NULL DEFAULT '', background INTEGER NOT NULL DEFAULT 0,
      status TEXT NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER, detail TEXT NOT NULL DEFAULT '',
      error_code TEXT, error_message TEXT, usage_json TEXT, events_json TEXT);
      CREATE TABLE run_events (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
      type TEXT NOT NULL, payload_json TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (run_id, seq));`);
    setup.close();
    const answers: CommitAnswer[] = [];
    const failures: Error[] = [];
    const thread = startHistoryWriterThread(
      { file, engine: 'better-sqlite3', betterSqlitePath },
      { onAnswer: (answer) => answers.push(answer), onFailure: (error) => failures.push(error) },
    );
    const insert = (id: string): WriteOp => [HistoryStatement.InsertRun, [id, 'a', 't', 's', '', 0, 1]];
    const first = thread.commit([insert('run-1')]);
    // An event of a run that does not exist breaks the foreign key: the whole commit is rolled back.
    const second = thread.commit([
      insert('run-2'),
      [HistoryStatement.InsertEvent, ['missing', 1, 'text-delta', '{}', 1]],
    ]);
    expect(thread.waitFor(second, 10_000)).toEqual({
      seq: second,
      error: expect.stringContaining('FOREIGN KEY'),
    });
    expect(answers.map((answer) => answer.seq)).toEqual([first, second]);
    expect(answers[0]?.error).toBeUndefined();
    await thread.close();
    const check = new Database(file, { readonly: true });
    expect(check.prepare('SELECT id FROM runs').all()).toEqual([{ id: 'run-1' }]);
    check.close();
    expect(failures).toEqual([]);
  });

  it('a thread that cannot open its file ends, and a synchronous wait returns at once with the reason', async () => {
    const failures: Error[] = [];
    const thread = startHistoryWriterThread(
      { file: path.join(dir, 'missing.db'), engine: 'better-sqlite3', betterSqlitePath },
      { onAnswer: () => undefined, onFailure: (error) => failures.push(error) },
    );
    const seq = thread.commit([]);
    const started = performance.now();
    expect(thread.waitFor(seq, 20_000)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.message).toContain('history writer thread');
    await thread.close();
  });
});
