#!/usr/bin/env node
// Release e2e: the node:sqlite run-history backend (the one the artifacts use) exercised under the artifacts' own
// Node 22 runtime, since the repo's Node 20 has no node:sqlite. Runs the compiled apps/node/dist module and checks
// the RunHistory contract: record/list/events, batching, crash recovery, retention, read-only, closed use, and the
// run-time selection (better-sqlite3's Node 20 addon does not load here). Prints `node:sqlite contract: N checks
// passed` or exits 1.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { isNodeSqliteAvailable, nodeSqliteDriver } = await import(
  path.join(repo, 'apps/node/dist/history/sqlite-driver.js')
);
const { SqliteRunHistory } = await import(path.join(repo, 'apps/node/dist/history/sqlite-run-history.js'));
const { openRunHistory, defaultHistoryProbes } = await import(
  path.join(repo, 'apps/node/dist/history/node-sqlite-fallback.js')
);
/** The history on node:sqlite, as the artifacts open it. */
const NodeSqliteRunHistory = { open: (options) => SqliteRunHistory.open(options, nodeSqliteDriver) };

let checks = 0;
function check(condition, message) {
  assert.ok(condition, message);
  checks += 1;
}
const start = (runId, startedAt) => ({
  runId,
  adapter: 'ollama',
  target: 'e2e-model',
  sessionId: 's',
  providerId: 'p',
  background: false,
  startedAt,
});

check(isNodeSqliteAvailable(), `node:sqlite available in ${process.version}`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-node-sqlite-'));
try {
  const file = path.join(dir, 'nested', 'history.db');
  const history = NodeSqliteRunHistory.open({ path: file, batchSize: 3, flushIntervalMs: 60_000 });
  check(history.journalMode() === 'wal' && history.backend === 'node:sqlite', 'WAL journal on node:sqlite');
  history.recordStart(start('run-1', 1000));
  history.appendEvent({ runId: 'run-1', seq: 1, type: 'start', payload: { sessionId: 's' }, at: 1001 });
  history.appendEvent({ runId: 'run-1', seq: 2, type: 'text-delta', payload: { text: 'hi' }, at: 1002 });
  check(history.events('run-1').length === 0, 'events stay buffered below batchSize');
  history.appendEvent({ runId: 'run-1', seq: 3, type: 'text-delta', payload: { text: '!' }, at: 1003 });
  check(history.events('run-1').length === 3, 'a full batch is written at once');
  history.finish('run-1', {
    status: 'completed',
    endedAt: 1500,
    detail: 'stop',
    usage: {
      promptTokens: 1,
      completionTokens: 2,
      totalTokens: 3,
      reasoningTokens: 0,
      cachedTokens: 0,
      costUsd: 0,
    },
  });
  const [run] = history.list();
  check(run.status === 'completed' && run.endedAt === 1500 && run.eventCount === 3, 'finished run summary');
  check(run.usage.totalTokens === 3 && run.background === false, 'usage and flags round-trip');
  assert.deepEqual(
    history.events('run-1').map((event) => [event.seq, event.type, event.payload]),
    [
      [1, 'start', { sessionId: 's' }],
      [2, 'text-delta', { text: 'hi' }],
      [3, 'text-delta', { text: '!' }],
    ],
  );
  checks += 1;
  history.recordStart(start('in-flight', 2000));
  // A crash: no finish, no close. The next open marks the run interrupted.
  const reopened = NodeSqliteRunHistory.open({ path: file, now: () => 9999, retainRuns: 1 });
  check(reopened.recoveredRuns === 1, 'crash recovery count');
  const runs = reopened.list({ limit: 10 });
  check(
    runs.find((r) => r.runId === 'in-flight')?.status === 'interrupted',
    'left-running run marked interrupted',
  );
  check(runs.length === 1, 'retention keeps the newest finished run only');
  const reader = NodeSqliteRunHistory.open({ path: file, readonly: true });
  check(reader.recoveredRuns === 0 && reader.list().length === 1, 'read-only open');
  assert.throws(() => reader.recordStart(start('x', 1)), { code: 'write_failed' });
  checks += 1;
  reader.close();
  reopened.close();
  history.close();
  history.close();
  assert.throws(() => history.list(), { code: 'closed' });
  checks += 1;
  assert.throws(() => NodeSqliteRunHistory.open({ path: path.join(dir, 'missing.db'), readonly: true }), {
    code: 'open_failed',
  });
  checks += 1;
  // The selector: this runtime cannot load the better-sqlite3 addon compiled for the repo's Node 20.
  check(
    defaultHistoryProbes.betterSqliteError() !== undefined,
    'better-sqlite3 does not load under Node 22 here',
  );
  const opened = openRunHistory({ path: file, readonly: true });
  check(
    opened.backend === 'node:sqlite' && opened.history.list()[0]?.runId === 'in-flight',
    'selector falls back',
  );
  opened.history.close();
  process.stdout.write(`node:sqlite contract: ${checks} checks passed (${process.version})\n`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
