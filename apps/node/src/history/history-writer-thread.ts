// The run history's commits on a worker thread with its own connection to the file, so the SQLite work of a
// commit (about a fifth of the node's event-loop time at saturation: inserts, retention deletes, the COMMIT's
// WAL writes) runs beside the event loop instead of inside it. The event loop still decides what a commit writes
// (history-ops.ts) and posts it; the thread applies each posted commit in one transaction, in order, and answers
// on a MessagePort. A caller that must see a commit done before it goes on (reads, close, tests) waits for it
// synchronously: the thread bumps a shared counter after each answer and the event loop sleeps on it
// (Atomics.wait) until its commit's answer can be taken off the port (receiveMessageOnPort).
//
// The source is plain JavaScript run with `eval` (the release node is one bundled file: there is no worker file to
// load), and it resolves no module itself: the caller says where better-sqlite3 is.
import { systemClock, type ClockTimer } from '@iop/clock';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { executeOps, HISTORY_STATEMENT_SQL, type WriteOp } from './history-ops.js';
import type { HistoryBackend } from './sqlite-driver.js';

export interface HistoryWriterThreadOptions {
  file: string;
  engine: HistoryBackend;
  /** Where the thread loads better-sqlite3 from; needed for that engine. */
  betterSqlitePath?: string;
}

/** A commit's answer: `error` is set when its transaction failed (and was rolled back). */
export interface CommitAnswer {
  seq: number;
  error?: string;
}

export interface HistoryWriterThread {
  /** Posts one commit; returns its sequence number (answers come back in this order). */
  commit(ops: WriteOp[]): number;
  /** Runs `sql` on the thread's connection (in order with the commits), e.g. a checkpoint pragma. */
  exec(sql: string): void;
  /**
   * Blocks until commit `seq` has been answered and returns its answer; every answer taken off the port on the way
   * goes to the answer listener first. Undefined when the thread does not answer within `timeoutMs` or has failed.
   */
  waitFor(seq: number, timeoutMs: number): CommitAnswer | undefined;
  /** Closes the thread's connection and stops it (terminated after CLOSE_TIMEOUT_MS). Idempotent. */
  close(): Promise<void>;
}

export interface HistoryWriterThreadEvents {
  /** Each commit's answer, in order, whether it arrived in the background or during a `waitFor`. */
  onAnswer(answer: CommitAnswer): void;
  /** The thread could not open the file, or failed or exited while running; nothing more will be answered. */
  onFailure(error: Error): void;
}

/** Longest wait for the thread to close its connection and exit before it is terminated. */
const CLOSE_TIMEOUT_MS = 5000;

// Runs in the thread. `execute` is executeOps' own source text (see there).
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { file, engine, betterSqlitePath, sql, port, answered } = workerData;
const execute = (${executeOps.toString()});
// However the thread ends (closed, failed to open, an uncaught error), a waitFor blocked on the event loop wakes up.
process.on('exit', () => {
  Atomics.store(answered, 1, 1);
  Atomics.add(answered, 0, 1);
  Atomics.notify(answered, 0);
});
let db;
try {
  if (engine === 'better-sqlite3') {
    const Database = require(betterSqlitePath);
    db = new Database(file, { fileMustExist: true });
  } else {
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
    db = new DatabaseSync(file, { enableForeignKeyConstraints: true });
  }
  // Per-connection settings: the same as the event loop's connection (sqlite-run-history.ts).
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
} catch (error) {
  port.postMessage({ kind: 'failed', error: error instanceof Error ? error.message : String(error) });
  port.close();
  return;
}
const statements = sql.map((text) => db.prepare(text));
const begin = db.prepare('BEGIN IMMEDIATE');
const commit = db.prepare('COMMIT');
const rollback = db.prepare('ROLLBACK');
const answer = (message) => {
  port.postMessage(message);
  Atomics.add(answered, 0, 1);
  Atomics.notify(answered, 0);
};
port.on('message', (message) => {
  if (message.kind === 'exec') {
    try { db.exec(message.sql); } catch {}
    return;
  }
  if (message.kind === 'close') {
    db.close();
    port.postMessage({ kind: 'closed' });
    port.close();
    return;
  }
  let error;
  try {
    begin.run();
    try {
      execute(statements, message.ops);
      commit.run();
    } catch (failure) {
      try { rollback.run(); } catch {}
      throw failure;
    }
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
  }
  answer(error === undefined ? { kind: 'answer', seq: message.seq } : { kind: 'answer', seq: message.seq, error });
});
`;

type ThreadMessage =
  { kind: 'answer'; seq: number; error?: string } | { kind: 'failed'; error: string } | { kind: 'closed' };

/**
 * Starts the writer thread. Throws when the worker cannot be created (the caller then commits on the event
 * loop); a thread that fails later reports it through `events.onFailure`.
 */
export function startHistoryWriterThread(
  options: HistoryWriterThreadOptions,
  events: HistoryWriterThreadEvents,
): HistoryWriterThread {
  if (options.engine === 'better-sqlite3' && options.betterSqlitePath === undefined) {
    throw new TypeError('startHistoryWriterThread: betterSqlitePath is needed for the better-sqlite3 engine');
  }
  const { port1: port, port2: threadPort } = new MessageChannel();
  // [0] counts the thread's answers (and its end), [1] is 1 once the thread has ended: a waitFor blocked in
  // Atomics.wait sees both, while worker events cannot be delivered to a blocked event loop.
  const answered = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(`(() => {${WORKER_SOURCE}})()`, {
    eval: true,
    workerData: {
      file: options.file,
      engine: options.engine,
      betterSqlitePath: options.betterSqlitePath,
      sql: HISTORY_STATEMENT_SQL,
      port: threadPort,
      answered,
    },
    transferList: [threadPort],
  });
  worker.unref();
  port.unref();
  let nextSeq = 0;
  let failed = false;
  let closing: Promise<void> | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      resolve();
    }),
  );

  const fail = (error: Error): void => {
    if (failed) return;
    failed = true;
    events.onFailure(error);
  };
  const handle = (message: ThreadMessage): void => {
    if (message.kind === 'answer') events.onAnswer({ seq: message.seq, error: message.error });
    else if (message.kind === 'failed') fail(new Error(`history writer thread: ${message.error}`));
  };
  port.on('message', handle);
  worker.on('error', (error) => fail(error));
  worker.on('exit', (code) => {
    if (closing === undefined) fail(new Error(`history writer thread exited with code ${code}`));
  });

  return {
    commit(ops) {
      nextSeq += 1;
      port.postMessage({ kind: 'commit', seq: nextSeq, ops });
      return nextSeq;
    },
    exec(sql) {
      if (!failed && closing === undefined) port.postMessage({ kind: 'exec', sql });
    },
    waitFor(seq, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        // Read before taking messages: whatever the thread posted before these moved is on the port by now.
        const seen = Atomics.load(answered, 0);
        const ended = Atomics.load(answered, 1) === 1;
        // Take what has arrived: answers are handled (in order) exactly as in the background.
        for (let received = receiveMessageOnPort(port); received; received = receiveMessageOnPort(port)) {
          const message = received.message as ThreadMessage;
          handle(message);
          if (message.kind === 'answer' && message.seq === seq) return { seq, error: message.error };
        }
        if (ended && closing === undefined) fail(new Error('history writer thread ended without answering'));
        if (failed || exited) return undefined;
        const left = deadline - performance.now();
        if (left <= 0) return undefined;
        // Sleep until the thread answers something more or ends (the counter moves).
        Atomics.wait(answered, 0, seen, left);
      }
    },
    close() {
      closing ??= (async () => {
        if (exited) return;
        // The thread takes messages in order: commits already posted are applied before it closes the file.
        port.postMessage({ kind: 'close' });
        let bound: ClockTimer | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          bound = systemClock.setTimeout(() => resolve('timeout'), CLOSE_TIMEOUT_MS, { keepAlive: true });
        });
        const outcome = await Promise.race([exit.then(() => 'exited' as const), timedOut]);
        systemClock.clearTimeout(bound);
        port.close();
        if (outcome === 'timeout') await worker.terminate();
      })();
      return closing;
    },
  };
}
