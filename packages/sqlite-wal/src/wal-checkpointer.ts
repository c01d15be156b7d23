// WAL checkpoints of a hot SQLite connection off its event loop. SQLite's automatic checkpoint runs inside the
// COMMIT that crosses `wal_autocheckpoint` pages: it copies the WAL into the database file and fsyncs it, which
// blocked the edge's event loop 8-16 ms every ~50 usage flushes and the node's for several ms under load
// (bench/README.md, "the latency tail"). Here the hot connection's automatic checkpoint is off, and a worker thread
// with its own connection to the same file runs a PASSIVE checkpoint (it never blocks the writer) `intervalMs`
// after the first commit that follows the last checkpoint (so at most one per `intervalMs`, and none while idle).
// A checkpoint's fsyncs stay in the worker; what is left in the writer is the fsync of the WAL header when the
// first commit after a complete checkpoint restarts the WAL, once per checkpoint instead of the whole copy.
// Durability is unchanged: a committed transaction is in the WAL whether or not it was checkpointed, and the next
// open of the file recovers the WAL after a kill -9. If the worker cannot start or dies, the hot connection gets
// SQLite's default automatic checkpoint back, so the WAL never grows without bound.
// Used by the edge's usage store and the node's run history; this package resolves no module itself (the caller
// passes where better-sqlite3 is), so it works the same in the workspace and in the bundled release.
import { systemClock, type ClockTimer } from '@iop/clock';
import { Worker } from 'node:worker_threads';

/** What the writer tells its checkpointer after each commit and at close. */
export interface WalCheckpointer {
  /** The hot connection committed a transaction: checkpoint the WAL soon, off the caller's thread. */
  committed(): void;
  /**
   * Runs a last checkpoint and stops. Call after the hot connection is closed. Idempotent. Resolves once the
   * worker has closed its connection and exited (at most CLOSE_TIMEOUT_MS, then the worker is terminated), so the
   * caller may remove the files afterwards: until then the worker's close may still write or delete the WAL.
   */
  close(): Promise<void>;
}

/** Longest wait for the worker's last checkpoint and exit before it is terminated. */
export const CLOSE_TIMEOUT_MS = 5000;

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

/** The SQLite engine the writer uses; the worker opens the file with the same one. */
export type SqliteEngine = 'better-sqlite3' | 'node:sqlite';

/** When the checkpointer reports a failure: the writer checkpoints by itself from then on. */
export type CheckpointerFailure =
  /** The worker could not be started. */
  | 'start'
  /** The worker failed or exited. */
  | 'worker'
  /** Giving the writer its automatic checkpoint back failed (the database fails as a whole). */
  | 'restore';

export interface WalCheckpointerOptions {
  /** The writer's connection; its automatic checkpoint is switched off while the worker runs. */
  db: { exec(sql: string): unknown };
  file: string;
  engine: SqliteEngine;
  /** Where the worker loads better-sqlite3 from (the caller's own resolution); needed for that engine. */
  betterSqlitePath?: string;
  /** Told when the worker fails and the writer checkpoints again (for the caller's log). */
  onFailure?: (error: unknown, when: CheckpointerFailure) => void;
  /** Hears each checkpoint's result (tests, diagnostics). */
  onCheckpoint?: (result: CheckpointResult) => void;
  /**
   * Least time between two checkpoints; default 2000 ms. Not after every commit: the first commit after a complete
   * checkpoint restarts the WAL, and a restart fsyncs the WAL header in the writer's commit (synchronous=NORMAL),
   * so restarts must stay rare. The WAL holds at most what is committed in this time.
   */
  intervalMs?: number;
}

/** SQLite's default `wal_autocheckpoint`, given back to the hot connection when the worker fails. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

// Plain JavaScript run by the worker (eval: the release edge is one bundled file, there is no worker file to load).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { file, engine, betterSqlitePath } = workerData;
let db;
if (engine === 'better-sqlite3') {
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
 * throws for a worker that fails (it reports it to `onFailure`): the hot connection keeps (or gets back) SQLite's
 * automatic checkpoint. Throws a TypeError only for a better-sqlite3 writer without `betterSqlitePath`.
 */
export function startWalCheckpointer(options: WalCheckpointerOptions): WalCheckpointer {
  const { db } = options;
  let worker: Worker | undefined;
  const intervalMs = options.intervalMs ?? 2000;
  let inFlight = false;
  let dirty = false;
  let timer: ClockTimer | undefined;
  let closed = false;

  const fallBack = (error: unknown): void => {
    if (worker === undefined) return;
    worker = undefined;
    if (closed) return;
    options.onFailure?.(error, 'worker');
    try {
      db.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    } catch (restoreError) {
      options.onFailure?.(restoreError, 'restore');
    }
  };
  const schedule = (): void => {
    if (timer !== undefined || inFlight || !dirty || closed) return;
    timer = systemClock.setTimeout(() => {
      timer = undefined;
      if (closed || worker === undefined) return;
      inFlight = true;
      dirty = false;
      worker.postMessage('checkpoint');
    }, intervalMs);
  };

  const betterSqlitePath = options.betterSqlitePath;
  if (options.engine === 'better-sqlite3' && betterSqlitePath === undefined) {
    throw new TypeError('startWalCheckpointer: betterSqlitePath is needed for the better-sqlite3 engine');
  }
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: options.file, engine: options.engine, betterSqlitePath },
    });
  } catch (error) {
    options.onFailure?.(error, 'start');
    return { committed() {}, close: () => Promise.resolve() };
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
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    started.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  started.on('exit', (code) => {
    if (worker === started && !closed) fallBack(new Error(`checkpoint worker exited with code ${code}`));
  });
  let closing: Promise<void> | undefined;

  return {
    committed() {
      if (closed || worker === undefined) return;
      dirty = true;
      schedule();
    },
    close() {
      closing ??= (async () => {
        closed = true;
        if (timer !== undefined) systemClock.clearTimeout(timer);
        timer = undefined;
        if (exited) return;
        // The worker answers messages in order: an in-flight checkpoint finishes first, then the last one. A
        // worker that failed (fallen back) may still be running: it is stopped the same way.
        started.postMessage('close');
        let bound: ClockTimer | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          bound = systemClock.setTimeout(() => resolve('timeout'), CLOSE_TIMEOUT_MS, { keepAlive: true });
        });
        const outcome = await Promise.race([exit.then(() => 'exited' as const), timedOut]);
        systemClock.clearTimeout(bound);
        if (outcome === 'timeout') await started.terminate();
      })();
      return closing;
    },
  };
}
