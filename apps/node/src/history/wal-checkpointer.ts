// WAL checkpoints of the run history off the event loop. SQLite's automatic checkpoint runs inside the COMMIT
// that crosses `wal_autocheckpoint` pages: it copies the WAL into the database file and fsyncs it, a stall of the
// node's event loop of several ms (up to tens under load; bench/README.md, "the latency tail"). Here the hot
// connection's automatic checkpoint is off, and a worker thread with its own connection to the same file runs a
// PASSIVE checkpoint (it never blocks the writer) `intervalMs` after the first commit that follows
// the last checkpoint (so at most one per `intervalMs`, and none while idle). A checkpoint's fsyncs stay in the
// worker; what is left in the writer is the fsync of the WAL header when the first commit after a complete
// checkpoint restarts the WAL, once per checkpoint instead of the whole copy.
// The edge's usage store does the same (apps/edge/src/governance/wal-checkpointer.ts; apps never import each
// other).
// Durability is unchanged: a committed transaction is in the WAL whether or not it was checkpointed, and the next
// open of the file recovers the WAL after a kill -9. If the worker cannot start or dies, the hot connection gets
// SQLite's default automatic checkpoint back, so the WAL never grows without bound.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { HistoryBackend, SqlDatabase } from './sqlite-driver.js';

/** What the run history tells its checkpointer after each commit and at close. */
export interface WalCheckpointer {
  /** The hot connection committed a transaction: checkpoint the WAL soon, off the caller's thread. */
  committed(): void;
  /** Runs a last checkpoint and stops. Call after the hot connection is closed. Idempotent. */
  close(): void;
}

/** One checkpoint's result, as `PRAGMA wal_checkpoint` reports it. */
export interface CheckpointResult {
  /** 1 when the checkpoint could not run (another checkpoint in progress). */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Frames copied into the database file (all of them = `log`). */
  checkpointed: number;
  /** Time the checkpoint took in the worker. */
  ms: number;
}

export interface WalCheckpointerOptions {
  /** The history's connection; its automatic checkpoint is switched off while the worker runs. */
  db: SqlDatabase;
  file: string;
  backend: HistoryBackend;
  /** Told when the worker fails and the writer checkpoints again (for the log). */
  onFailure?: (error: unknown) => void;
  /** Hears each checkpoint's result (tests, diagnostics). */
  onCheckpoint?: (result: CheckpointResult) => void;
  /**
   * Least time between two checkpoints; default 2000 ms. Not after every commit: the first commit after a complete
   * checkpoint restarts the WAL, and a restart fsyncs the WAL header in the writer's commit (synchronous=NORMAL),
   * so restarts must stay rare. The WAL holds at most what is committed in this time.
   */
  intervalMs?: number;
  /** Where the worker loads better-sqlite3 from (tests inject a bad one); default: the node's own. */
  betterSqlitePath?: string;
}

/** SQLite's default `wal_autocheckpoint`, given back to the hot connection when the worker fails. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

// Plain JavaScript run by the worker (eval: the release edge is one bundled file, there is no worker file to load).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { file, backend, betterSqlitePath } = workerData;
let db;
if (backend === 'better-sqlite3') {
  const Database = require(betterSqlitePath);
  db = new Database(file, { fileMustExist: true });
} else {
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
  db = new DatabaseSync(file);
}
db.exec('PRAGMA busy_timeout = 5000');
db.exec('PRAGMA wal_autocheckpoint = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (message) => {
  const started = performance.now();
  const row = checkpoint.get();
  const result = { busy: Number(row.busy), log: Number(row.log), checkpointed: Number(row.checkpointed), ms: performance.now() - started };
  if (message === 'close') {
    db.close();
    parentPort.postMessage({ kind: 'closed', result });
    parentPort.close();
    return;
  }
  parentPort.postMessage({ kind: 'checkpoint', result });
});
parentPort.postMessage({ kind: 'ready' });
`;

type WorkerMessage = { kind: 'ready' } | { kind: 'checkpoint' | 'closed'; result: CheckpointResult };

/**
 * Starts the checkpoint worker for `file` and switches the hot connection's automatic checkpoint off. Never
 * throws for a worker that fails: the hot connection keeps (or gets back) SQLite's automatic checkpoint.
 */
export function startWalCheckpointer(options: WalCheckpointerOptions): WalCheckpointer {
  const { db } = options;
  let worker: Worker | undefined;
  const intervalMs = options.intervalMs ?? 2000;
  let inFlight = false;
  let dirty = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const fallBack = (error: unknown): void => {
    if (worker === undefined) return;
    worker = undefined;
    if (closed) return;
    options.onFailure?.(error);
    try {
      db.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    } catch {
      // A database failing as a whole reports it through its writes (onWriteFailure).
    }
  };
  const schedule = (): void => {
    if (timer !== undefined || inFlight || !dirty || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (closed || worker === undefined) return;
      inFlight = true;
      dirty = false;
      worker.postMessage('checkpoint');
    }, intervalMs);
    timer.unref();
  };

  try {
    const betterSqlitePath =
      options.backend === 'better-sqlite3'
        ? (options.betterSqlitePath ?? createRequire(import.meta.url).resolve('better-sqlite3'))
        : undefined;
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: options.file, backend: options.backend, betterSqlitePath },
    });
  } catch (error) {
    options.onFailure?.(error);
    return { committed() {}, close() {} };
  }
  const started = worker;
  started.unref();
  db.exec('PRAGMA wal_autocheckpoint = 0');
  // Until the worker has opened the file, a commit only marks the WAL dirty.
  inFlight = true;
  started.on('message', (message: WorkerMessage) => {
    if (message.kind !== 'ready') options.onCheckpoint?.(message.result);
    if (message.kind === 'closed') return;
    inFlight = false;
    schedule();
  });
  started.on('error', fallBack);
  started.on('exit', (code) => {
    if (worker === started && !closed) fallBack(new Error(`checkpoint worker exited with code ${code}`));
  });

  return {
    committed() {
      if (closed || worker === undefined) return;
      dirty = true;
      schedule();
    },
    close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      // The worker answers messages in order: an in-flight checkpoint finishes first, then the last one.
      worker?.postMessage('close');
    },
  };
}
