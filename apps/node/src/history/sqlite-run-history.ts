// RunHistory on SQLite, synchronous, on either engine of sqlite-driver.ts (better-sqlite3 by default, node:sqlite
// in the release runtime): same file format, so either opens the other's database. WAL journal so `iop-node
// history` can read while the node writes, and so a killed process leaves a consistent database.
//
// Durability model: every write (a run's start, its events, its end) joins one in-memory queue, committed in
// order in one transaction. Run starts and ends are committed at the end of the event-loop turn that recorded
// them (setImmediate), together with every other run's starts, events and ends of that turn, unless the previous
// commit is younger than `commitIntervalMs` (default 50 ms): then at that age (a timer). An idle or lightly loaded
// node commits each turn as it comes; a busy one commits about every `commitIntervalMs`, so a commit carries many
// runs instead of one or two (under load a run's start and end arrive on separate turns). A commit's cost is
// mostly the pages it writes to the WAL, and with random run ids each run dirties leaf pages of the id indexes all
// over them: at a few hundred runs per second most index pages are dirty in every commit, so fewer commits is
// what makes a run cheaper. Events alone wait for a full batch (`batchSize` events, default 256, written at once:
// at ~5,000 events/s that is about one commit per 50 ms too), for `flushIntervalMs`, or for the next commit. Reads through this object (`list`,
// `events`) and `close` commit the queue first, so they see everything recorded.
//
// Storage: one `runs` row per run, and its events as `run_events` rows, except for a run whose start, events and
// end are committed together (under load most of them): its events are written inside its row (`events_json`),
// one insert instead of one per event. Reads merge both; a schema 1 file (no `events_json`) gains the column when
// opened writable and is read as it is when opened read-only.
//
// Where commits run: on a writer thread with its own connection (history-writer-thread.ts) when the engine is
// better-sqlite3 or node:sqlite, so the SQLite work (about a fifth of the node's event-loop time at saturation)
// runs beside the event loop. The event loop still queues, decides what each commit writes (history-ops.ts) and
// posts it; one commit is out at a time, and its writes count as pending until the thread answers. Reads, close
// and `flush()` wait for the answer, so they see everything recorded, exactly as when committing on the event loop,
// which is where commits run with any other driver, when the thread cannot start, and after it fails.
//
// WAL checkpoints run in a worker thread (@iop/sqlite-wal, at most one per 2 s while commits come): the writer's
// automatic checkpoint is off, so no commit on the event loop copies the WAL into the database file. A committed write is
// in the WAL either way, so this changes nothing of what a kill -9 can lose.
//
// What a kill -9 can lose: the writes still queued, i.e. the run starts and ends recorded during the event-loop
// turn in progress (within `commitIntervalMs` of the previous commit: during that interval), and events younger
// than `flushIntervalMs` (at most `batchSize` of them) of runs that have
// not ended, and the commit out on the writer thread (posted, not yet written: a millisecond or two). Commits apply
// the queue in order and whole, so the database always holds a prefix of what was
// recorded: a run is absent, `running` (marked `interrupted` on the next open, with its committed events
// 1..n), or ended with all its events. Retention keeps the newest `retainRuns` finished runs (with their
// events); running runs are never pruned.
//
// A write that keeps failing (disk full, database locked by a stuck reader) must not stop runs or grow memory:
// at most `maxPendingEvents` events and `maxPendingEvents` run starts/ends wait in memory (later ones are
// dropped and counted), a failed background commit is retried only after a backoff (doubling up to 30 s), and
// `onWriteFailure` hears of each failed attempt with the counts, so the node logs one line per attempt rather
// than one per event.
import { systemClock, type ClockTimer } from '@iop/clock';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWalCheckpointer, type WalCheckpointer, type WalCheckpointerOptions } from '@iop/sqlite-wal';
import type { Usage } from '@iop/wire';
import { HistoryError } from './history-error.js';
import { executeOps, HISTORY_STATEMENT_SQL, HistoryStatement, type WriteOp } from './history-ops.js';
import {
  startHistoryWriterThread,
  type CommitAnswer,
  type HistoryWriterThread,
  type HistoryWriterThreadOptions,
} from './history-writer-thread.js';
import type {
  RunEventRecord,
  RunHistory,
  RunEndRecord,
  RunStartRecord,
  RunStatus,
  RunSummary,
} from './run-history.js';
import {
  betterSqliteDriver,
  nodeSqliteDriver,
  type HistoryBackend,
  type SqlDatabase,
  type SqliteDriver,
  type SqlStatement,
} from './sqlite-driver.js';

export const HISTORY_FILE_NAME = 'history.db';
export const DEFAULT_RETAIN_RUNS = 1000;
/**
 * 2: runs.events_json (the events of a run committed whole, see `apply`). 3: a run that ended in an error has
 * status `error` (the product's run-outcome word), no longer `failed`.
 */
const SCHEMA_VERSION = 3;
export const INTERRUPTED_DETAIL = 'node stopped before the run ended';

export interface SqliteRunHistoryOptions {
  /** Database file. Its directory is created when missing (unless read-only). */
  path: string;
  /** Finished runs kept (newest first); older ones and their events are deleted. */
  retainRuns?: number;
  batchSize?: number;
  flushIntervalMs?: number;
  /** Least time between two commits of run starts/ends (see the durability model); default 50 ms. */
  commitIntervalMs?: number;
  /** Clock for the `ended_at` of runs marked interrupted at open. */
  now?: () => number;
  /** Open for reading only (the `history` command): no crash recovery, no writes. */
  readonly?: boolean;
  /**
   * Events kept in memory while writes fail; further events are dropped and counted (default 10,000). Run starts
   * and ends waiting for a commit have a bound of the same size of their own.
   */
  maxPendingEvents?: number;
  /** Told of every failed write attempt (for the log). */
  onWriteFailure?: (failure: HistoryWriteFailure) => void;
  /**
   * Starts the WAL checkpointer of a writable history, told after each commit and closed after the database
   * (default startWalCheckpointer: a worker thread, so no checkpoint runs in a commit on the event loop).
   */
  startCheckpointer?: (options: WalCheckpointerOptions) => WalCheckpointer;
  /** Told when the checkpoint worker fails; the writer then checkpoints itself again (for the log). */
  onCheckpointFailure?: (error: unknown) => void;
  /**
   * Commit on a writer thread (default true for a writable history on better-sqlite3 or node:sqlite; a driver of
   * another kind, e.g. a test's, always commits on the event loop). See "Where commits run" above.
   */
  writerThread?: boolean;
  /** Starts the writer thread (default startHistoryWriterThread). */
  startWriterThread?: typeof startHistoryWriterThread;
  /** Told when the writer thread cannot start or fails; commits then run on the event loop (for the log). */
  onWriterThreadFailure?: (error: unknown) => void;
}

export interface HistoryWriteFailure {
  error: string;
  pendingEvents: number;
  droppedEvents: number;
  /** Run starts and ends waiting for a write, and those dropped because too many were waiting. */
  pendingRuns: number;
  droppedRuns: number;
  /** When the next background flush will be attempted. */
  retryInMs: number;
}

const MAX_RETRY_BACKOFF_MS = 30_000;
/** Longest a read, close or flush() waits for the writer thread's answer before committing on the event loop. */
const WRITER_ANSWER_TIMEOUT_MS = 30_000;

/** One recorded write waiting for its commit; the queue is applied in order. */
type QueuedWrite =
  | { kind: 'start'; run: RunStartRecord }
  | { kind: 'event'; event: RunEventRecord }
  | { kind: 'finish'; runId: string; outcome: RunEndRecord };

interface RunRow {
  id: string;
  adapter: string;
  target: string;
  session_id: string;
  provider_id: string;
  background: number;
  status: string;
  started_at: number;
  ended_at: number | null;
  detail: string;
  error_code: string | null;
  error_message: string | null;
  usage_json: string | null;
  event_count: number;
}

/** An event folded into its run's row (`runs.events_json`): seq, type, payload, at. */
type InlineEvent = [number, string, unknown, number];

interface EventRow {
  run_id: string;
  seq: number;
  type: string;
  payload_json: string;
  at: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  adapter TEXT NOT NULL,
  target TEXT NOT NULL,
  session_id TEXT NOT NULL,
  provider_id TEXT NOT NULL DEFAULT '',
  background INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  detail TEXT NOT NULL DEFAULT '',
  error_code TEXT,
  error_message TEXT,
  usage_json TEXT,
  -- The events of a run whose start, events and end were committed together (most runs under load), as a JSON
  -- array of [seq, type, payload, at]: one row written instead of one per event. Other events are run_events rows.
  events_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs(started_at);
-- No index on status: every run would update it twice (start, end) for queries that do not use it (recovery at
-- open scans the few retained runs; retention's status != 'running' cannot use it). Older versions created it.
DROP INDEX IF EXISTS runs_by_status;
CREATE TABLE IF NOT EXISTS run_events (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
);
`;

export class SqliteRunHistory implements RunHistory {
  /** Runs found `running` at open and marked `interrupted` (0 when read-only). */
  readonly recoveredRuns: number;
  readonly path: string;
  /** The SQLite engine underneath. */
  readonly backend: HistoryBackend;
  private readonly db: SqlDatabase;
  private readonly readonly: boolean;
  private readonly retainRuns: number;
  /** Finishes between two retention passes (see pruneDue). */
  private readonly pruneEvery: number;
  private finishesSincePrune = 0;
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly commitIntervalMs: number;
  /** performance.now() of the last commit (a monotonic clock: `now` may be a test's fixed clock). */
  private lastCommitAt = -Infinity;
  /** Writes not committed yet, in the order they were recorded. */
  private queue: QueuedWrite[] = [];
  /** Events and run starts/ends in `queue`. */
  private queuedEvents = 0;
  private queuedRuns = 0;
  private readonly maxPendingEvents: number;
  private readonly onWriteFailure: ((failure: HistoryWriteFailure) => void) | undefined;
  private readonly now: () => number;
  /** Events not recorded because too many were waiting for a failing write. */
  droppedEvents = 0;
  /** Run starts and ends not recorded because too many were waiting for a failing write. */
  droppedRuns = 0;
  private retryAt = 0;
  private backoffMs = 0;
  private flushTimer: ClockTimer | undefined;
  /** The commit of queued run starts/ends, when one is scheduled: at the end of this turn, or on a timer. */
  private commitImmediate: NodeJS.Immediate | undefined;
  private commitTimer: ClockTimer | undefined;
  private readonly commitQueued = (): void => {
    this.commitImmediate = undefined;
    this.commitTimer = undefined;
    this.backgroundFlush();
  };
  private closed = false;
  private closing: Promise<void> | undefined;
  /** The event loop's prepared writes: every commit when there is no writer thread, and retention at open. */
  private readonly statements: Statements | undefined;
  private checkpointer: WalCheckpointer | undefined;
  /** Where commits run when not on the event loop (see "Where commits run"). */
  private writer: HistoryWriterThread | undefined;
  /**
   * The commit posted to the writer thread and not answered yet. One at a time: the next waits for its answer, so
   * a failed commit can be retried before anything recorded after it.
   */
  private inFlight: { seq: number; batch: QueuedWrite[]; events: number; runs: number } | undefined;
  private readonly onWriterThreadFailure: ((error: unknown) => void) | undefined;
  /** Writes queued so far, and how many of them are committed (for whenCommitted). */
  private recordedWrites = 0;
  private committedWrites = 0;
  private commitWaiters: { target: number; resolve: () => void }[] = [];

  private constructor(
    db: SqlDatabase,
    backend: HistoryBackend,
    options: SqliteRunHistoryOptions,
    recoveredRuns: number,
    /** runs.events_json exists (always once opened writable; a read-only open may meet a schema 1 file). */
    private readonly inlineEvents = true,
  ) {
    this.db = db;
    this.backend = backend;
    this.path = options.path;
    this.readonly = options.readonly ?? false;
    this.retainRuns = Math.max(1, options.retainRuns ?? DEFAULT_RETAIN_RUNS);
    this.pruneEvery = pruneInterval(this.retainRuns);
    this.batchSize = Math.max(1, options.batchSize ?? 256);
    this.flushIntervalMs = Math.max(1, options.flushIntervalMs ?? 200);
    this.commitIntervalMs = Math.max(0, options.commitIntervalMs ?? 50);
    this.maxPendingEvents = Math.max(1, options.maxPendingEvents ?? 10_000);
    this.onWriteFailure = options.onWriteFailure;
    this.onWriterThreadFailure = options.onWriterThreadFailure;
    this.now = options.now ?? (() => systemClock.now());
    this.recoveredRuns = recoveredRuns;
    this.statements = this.readonly ? undefined : prepare(db);
  }

  /**
   * Opens (creating when needed) the database, applies the schema and, unless read-only, marks runs left
   * `running` by a previous process as `interrupted` and applies retention.
   */
  static open(options: SqliteRunHistoryOptions, driver: SqliteDriver = betterSqliteDriver): SqliteRunHistory {
    const readonly = options.readonly ?? false;
    let db: SqlDatabase;
    let history: SqliteRunHistory | undefined;
    try {
      if (!readonly) fs.mkdirSync(path.dirname(options.path), { recursive: true, mode: 0o700 });
      db = driver.open(options.path, readonly);
    } catch (error) {
      throw new HistoryError('open_failed', `cannot open run history ${options.path}: ${message(error)}`, {
        cause: error,
      });
    }
    try {
      db.exec('PRAGMA busy_timeout = 5000');
      if (readonly) return new SqliteRunHistory(db, driver.backend, options, 0, hasInlineEvents(db));
      db.exec('PRAGMA journal_mode = WAL');
      // NORMAL in WAL mode is crash-safe for the database; only the last commits may be lost on power failure.
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec('PRAGMA foreign_keys = ON');
      db.exec(SCHEMA);
      // A database written by schema 1 has no events_json yet (CREATE TABLE IF NOT EXISTS left it as it was).
      if (!hasInlineEvents(db)) db.exec('ALTER TABLE runs ADD COLUMN events_json TEXT');
      // Schemas 1 and 2 recorded an error outcome as `failed`. One transaction with the version bump, so a crash
      // in between leaves the file to be migrated again on the next open.
      const version =
        (db.prepare('PRAGMA user_version').get() as { user_version?: number } | undefined)?.user_version ?? 0;
      db.exec(
        version < 3
          ? `BEGIN; UPDATE runs SET status = 'error' WHERE status = 'failed'; PRAGMA user_version = ${SCHEMA_VERSION}; COMMIT;`
          : `PRAGMA user_version = ${SCHEMA_VERSION}`,
      );
      const now = (options.now ?? (() => systemClock.now()))();
      const recovered = Number(
        db
          .prepare(
            `UPDATE runs SET status = 'interrupted', ended_at = ?, detail = ? WHERE status = 'running'`,
          )
          .run(now, INTERRUPTED_DETAIL).changes,
      );
      const opened = new SqliteRunHistory(db, driver.backend, options, recovered);
      history = opened;
      opened.prune();
      const betterSqlitePath =
        driver.backend === 'better-sqlite3'
          ? createRequire(import.meta.url).resolve('better-sqlite3')
          : undefined;
      // Only the two engines a thread can open by itself (a test's fault-injecting driver stays on the event loop).
      const threadable = driver === betterSqliteDriver || driver === nodeSqliteDriver;
      if (threadable && (options.writerThread ?? true)) {
        opened.startWriter(options.startWriterThread ?? startHistoryWriterThread, {
          file: options.path,
          engine: driver.backend,
          betterSqlitePath,
        });
      }
      // Started after the writer thread: the checkpoint pragmas must reach every connection that commits.
      opened.checkpointer = (options.startCheckpointer ?? startWalCheckpointer)({
        db: { exec: (sql: string) => opened.execOnWriters(sql) },
        file: options.path,
        engine: driver.backend,
        betterSqlitePath,
        onFailure: options.onCheckpointFailure,
      });
      return opened;
    } catch (error) {
      void history?.abandon();
      db.close();
      if (error instanceof HistoryError) throw error;
      throw new HistoryError(
        'open_failed',
        `cannot initialise run history ${options.path}: ${message(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** Commits go to a writer thread from now on; when it cannot start they stay on the event loop. */
  private startWriter(start: typeof startHistoryWriterThread, options: HistoryWriterThreadOptions): void {
    try {
      this.writer = start(options, {
        onAnswer: (answer) => this.onCommitAnswer(answer),
        onFailure: (error) => this.writerFailed(error),
      });
    } catch (error) {
      this.onWriterThreadFailure?.(error);
    }
  }

  /** Runs `sql` on every connection that commits (the checkpointer's pragmas). */
  private execOnWriters(sql: string): void {
    this.db.exec(sql);
    this.writer?.exec(sql);
  }

  /** Stops the threads of a history whose open failed. */
  private abandon(): Promise<void> {
    const writer = this.writer;
    this.writer = undefined;
    return Promise.all([writer?.close(), this.checkpointer?.close()]).then(() => undefined);
  }

  /** Journal mode reported by SQLite (`wal` for a writable history). */
  journalMode(): string {
    const row = this.db.prepare('PRAGMA journal_mode').get() as { journal_mode?: string } | undefined;
    return String(row?.journal_mode ?? '');
  }

  /**
   * Queues the run's start, committed at the end of this event-loop turn. A run id seen before (an edge retry)
   * starts over: the commit deletes its old events first. Never throws for a failing write (see the class).
   */
  recordStart(run: RunStartRecord): void {
    this.writable();
    this.queueRunWrite({ kind: 'start', run });
  }

  /** Queues an event; never throws for a failing write (the events wait, bounded, for the next attempt). */
  appendEvent(event: RunEventRecord): void {
    this.writable();
    if (this.queuedEvents >= this.maxPendingEvents) {
      this.droppedEvents += 1;
      return;
    }
    this.queue.push({ kind: 'event', event });
    this.queuedEvents += 1;
    this.recordedWrites += 1;
    if (this.queuedEvents >= this.batchSize && this.now() >= this.retryAt) {
      this.backgroundFlush();
      return;
    }
    this.scheduleFlush();
  }

  /** Queues the run's end, committed (with its events) at the end of this event-loop turn. Never throws. */
  finish(runId: string, outcome: RunEndRecord): void {
    this.writable();
    this.queueRunWrite({ kind: 'finish', runId, outcome });
  }

  /**
   * Resolves once every write recorded before the call is committed (on the writer thread, once it answered), or
   * the history is closed. Writes are committed on their own schedule (see the class); this only waits for it.
   */
  whenCommitted(): Promise<void> {
    if (this.closed || this.committedWrites >= this.recordedWrites) return Promise.resolve();
    return new Promise((resolve) => this.commitWaiters.push({ target: this.recordedWrites, resolve }));
  }

  private wroteCommitted(writes: number): void {
    this.committedWrites += writes;
    if (this.commitWaiters.length === 0) return;
    const waiting = this.commitWaiters;
    this.commitWaiters = [];
    for (const waiter of waiting) {
      if (waiter.target <= this.committedWrites) waiter.resolve();
      else this.commitWaiters.push(waiter);
    }
  }

  /** Events waiting in memory for a write. */
  get pendingEvents(): number {
    return this.queuedEvents;
  }

  /** Run starts and ends waiting in memory for a write. */
  get pendingRuns(): number {
    return this.queuedRuns;
  }

  private queueRunWrite(write: QueuedWrite): void {
    if (this.queuedRuns >= this.maxPendingEvents) {
      this.droppedRuns += 1;
      return;
    }
    this.queue.push(write);
    this.queuedRuns += 1;
    this.recordedWrites += 1;
    this.scheduleCommit();
  }

  /** Schedules the commit of queued run starts/ends: at the end of this turn, or `commitIntervalMs` after the last. */
  private scheduleCommit(): void {
    if (this.commitImmediate || this.commitTimer) return;
    if (this.now() < this.retryAt) {
      // Writes are failing: the backoff timer retries; a commit per turn would hammer a full disk.
      this.scheduleFlush();
      return;
    }
    const wait = this.lastCommitAt + this.commitIntervalMs - performance.now();
    if (wait <= 0) this.commitImmediate = setImmediate(this.commitQueued);
    else this.commitTimer = systemClock.setTimeout(this.commitQueued, Math.ceil(wait), { keepAlive: true });
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.queue.length === 0) return;
    const delay = Math.max(this.flushIntervalMs, this.retryAt - this.now());
    this.flushTimer = systemClock.setTimeout(() => {
      this.flushTimer = undefined;
      this.backgroundFlush();
    }, delay);
  }

  /** A flush whose failure is reported (onWriteFailure) and retried after the backoff, not thrown. */
  private backgroundFlush(): void {
    if (this.writer) {
      if (this.inFlight && this.behind()) {
        // The thread is behind: the event loop waits for it (as it would commit itself) rather than let the
        // bounded queue drop writes.
        try {
          this.awaitInFlight();
        } catch {
          // Reported by onCommitAnswer; the writes are queued again for the retry after the backoff.
        }
      }
      // Posted, not waited for; while a commit is out, its answer schedules the next one (scheduleQueued).
      if (!this.inFlight && !this.closed && this.queue.length > 0 && this.now() >= this.retryAt) this.post();
      this.scheduleFlush();
      return;
    }
    try {
      this.flush();
    } catch {
      // Reported by write(); the events stay pending (bounded) for the retry scheduled below.
    }
    this.scheduleFlush();
  }

  /**
   * Commits every queued write now, in one transaction, and returns once it is committed (on the writer thread:
   * after waiting for its answer). Throws HistoryError `write_failed` when it fails.
   */
  flush(): void {
    if (this.closed || this.readonly) return;
    for (;;) {
      // An answer taken while waiting may post the next commit at once (scheduleQueued): wait for that one too.
      this.awaitInFlight();
      if (this.inFlight) continue;
      if (this.queue.length === 0) return;
      if (!this.writer) break;
      this.post();
    }
    const statements = this.writable();
    const batch = this.queue;
    const ops = this.buildOps(batch);
    this.write(() => {
      this.transaction(statements, () => executeOps(statements.ops, ops));
    });
    // Only drop the batch once it is committed, so a failed write can be retried. Nothing is queued while the
    // synchronous commit runs.
    this.lastCommitAt = performance.now();
    this.queue = [];
    this.queuedEvents = 0;
    this.queuedRuns = 0;
    this.wroteCommitted(batch.length);
  }

  /** Half the pending bound is in use (queued plus the commit out): the writer thread does not keep up. */
  private behind(): boolean {
    const half = this.maxPendingEvents / 2;
    return this.queuedEvents >= half || this.queuedRuns >= half;
  }

  /**
   * Hands the queue to the writer thread as one commit. Its writes still count as pending (against the memory
   * bounds) until the thread answers: then they are dropped, or put back in front of the queue when it failed.
   */
  private post(): void {
    const writer = this.writer;
    if (!writer) return;
    const batch = this.queue;
    const seq = writer.commit(this.buildOps(batch));
    // Nothing else is out (one commit at a time), so the pending counts are this batch's.
    this.inFlight = { seq, batch, events: this.queuedEvents, runs: this.queuedRuns };
    this.lastCommitAt = performance.now();
    this.queue = [];
  }

  /** Waits for the commit on the writer thread, if one is out; throws its failure as `write_failed`. */
  private awaitInFlight(): void {
    const inFlight = this.inFlight;
    if (!inFlight || !this.writer) return;
    const answer = this.writer.waitFor(inFlight.seq, WRITER_ANSWER_TIMEOUT_MS);
    // Its answer has been applied by onCommitAnswer (or the thread's failure by writerFailed) on the way.
    if (answer === undefined && this.inFlight === inFlight) {
      this.writerFailed(
        new Error(`history writer thread did not answer within ${WRITER_ANSWER_TIMEOUT_MS} ms`),
      );
    }
    if (answer?.error !== undefined) {
      throw new HistoryError('write_failed', `cannot write run history: ${answer.error}`);
    }
  }

  /** The writer thread's answer for a commit (in the background, or during awaitInFlight). */
  private onCommitAnswer(answer: CommitAnswer): void {
    const inFlight = this.inFlight;
    if (!inFlight || inFlight.seq !== answer.seq) return;
    this.inFlight = undefined;
    if (answer.error === undefined) {
      this.queuedEvents -= inFlight.events;
      this.queuedRuns -= inFlight.runs;
      this.committed();
      this.wroteCommitted(inFlight.batch.length);
    } else {
      // Retried first, so the database still only ever holds a prefix of what was recorded.
      this.queue = inFlight.batch.concat(this.queue);
      this.failed(answer.error);
    }
    if (!this.closed) this.scheduleQueued();
  }

  /**
   * The writer thread failed (or stopped answering): commits run on the event loop from now on. A commit it had
   * not answered is queued again; applying it a second time (the thread may have committed it) writes the same
   * rows, because a run's start that finds its row starts it over and its events and end follow in the batch.
   */
  private writerFailed(error: Error): void {
    const writer = this.writer;
    if (!writer) return;
    this.writer = undefined;
    void writer.close();
    const inFlight = this.inFlight;
    this.inFlight = undefined;
    if (inFlight) this.queue = inFlight.batch.concat(this.queue);
    this.onWriterThreadFailure?.(error);
    if (!this.closed) this.scheduleQueued();
  }

  /** After a commit's answer: what was recorded meanwhile is committed as the queue's own schedule says. */
  private scheduleQueued(): void {
    // Nothing is out now, so the pending counts are the queue's.
    if (this.queuedRuns > 0) this.scheduleCommit();
    else if (this.queuedEvents >= this.batchSize && this.now() >= this.retryAt) this.backgroundFlush();
    else if (this.queuedEvents > 0) this.scheduleFlush();
  }

  /**
   * What one commit writes: each run's start, events and end in the order recorded, except that a run whose start
   * and end are both in `batch` (most of them under load) is inserted ended, with the events recorded between the
   * two inside its row (runs.events_json): one statement instead of an insert, an update and a row per event (each
   * event row cost ~6 µs of CPU, the run row ~11). Should that insert find the run id already there (an edge
   * retry), the run is written the long way instead: started over, its events as rows, then ended.
   */
  private buildOps(batch: QueuedWrite[]): WriteOp[] {
    const ops: WriteOp[] = [];
    let prune = false;
    const ends = endsOfRunsStartedIn(batch);
    /** Writes already part of their run's folded insert. */
    let folded: Set<QueuedWrite> | undefined;
    for (const write of batch) {
      if (folded?.has(write)) {
        if (write.kind === 'finish' && this.pruneDue()) prune = true;
        continue;
      }
      switch (write.kind) {
        case 'start': {
          const { run } = write;
          const end = ends?.get(run.runId);
          if (end === undefined || end.start !== write) {
            ops.push(startOp(run));
            break;
          }
          const inline = inlineEventsJson(end.events);
          const row = [
            ...runColumns(run),
            run.startedAt,
            ...outcomeColumns(end.finish.outcome),
            inline ?? null,
          ];
          if (inline === undefined) {
            // No events, or events that cannot go inline (a repeated seq): those stay rows, written after the
            // run's row; a run id seen before starts over first.
            ops.push([HistoryStatement.InsertEndedRun, row, [startOp(run), finishOp(end.finish)]]);
            for (const event of end.events) ops.push(eventOp(event));
          } else {
            // A run id seen before: its old event rows go and the row is rewritten whole (the same parameters).
            ops.push([
              HistoryStatement.InsertEndedRun,
              row,
              [
                [HistoryStatement.DeleteEvents, [run.runId]],
                [HistoryStatement.ReplaceEndedRun, row],
              ],
            ]);
          }
          folded ??= new Set();
          for (const event of end.events) folded.add(event);
          folded.add(end.finish);
          break;
        }
        case 'event':
          ops.push(eventOp(write));
          break;
        case 'finish':
          if (this.pruneDue()) prune = true;
          ops.push(finishOp(write));
          break;
        default: {
          const unreachable: never = write;
          throw new Error(`unknown history write ${JSON.stringify(unreachable)}`);
        }
      }
    }
    if (prune) ops.push(this.pruneOp());
    return ops;
  }

  /** Reads see every write recorded so far: commit the queue first (a failing write is reported, not thrown). */
  private commitBeforeRead(): void {
    if (this.readonly || (this.queue.length === 0 && this.inFlight === undefined)) return;
    try {
      this.flush();
    } catch {
      // Reported through onWriteFailure; the read shows what is committed.
    }
  }

  list(options: { limit?: number } = {}): RunSummary[] {
    this.open();
    this.commitBeforeRead();
    const limit = Math.max(1, Math.floor(options.limit ?? 20));
    try {
      const inline = this.inlineEvents ? ' + COALESCE(json_array_length(r.events_json), 0)' : '';
      const rows = this.db
        .prepare(
          `SELECT r.*, (SELECT COUNT(*) FROM run_events e WHERE e.run_id = r.id)${inline} AS event_count
           FROM runs r ORDER BY r.started_at DESC, r.rowid DESC LIMIT ?`,
        )
        .all(limit) as RunRow[];
      return rows.map(toSummary);
    } catch (error) {
      throw new HistoryError('read_failed', `cannot read run history: ${message(error)}`, { cause: error });
    }
  }

  events(runId: string): RunEventRecord[] {
    this.open();
    this.commitBeforeRead();
    try {
      const rows = this.db
        .prepare(`SELECT * FROM run_events WHERE run_id = ? ORDER BY seq`)
        .all(runId) as EventRow[];
      const events: RunEventRecord[] = rows.map((row) => ({
        runId: row.run_id,
        seq: row.seq,
        type: row.type,
        payload: JSON.parse(row.payload_json) as unknown,
        at: row.at,
      }));
      if (!this.inlineEvents) return events;
      const run = this.db.prepare(`SELECT events_json FROM runs WHERE id = ?`).get(runId) as
        { events_json: string | null } | undefined;
      if (!run?.events_json) return events;
      for (const [seq, type, payload, at] of JSON.parse(run.events_json) as InlineEvent[]) {
        events.push({ runId, seq, type, payload, at });
      }
      return events.sort((a, b) => a.seq - b.seq);
    } catch (error) {
      throw new HistoryError('read_failed', `cannot read run events: ${message(error)}`, { cause: error });
    }
  }

  /**
   * Commits the queue and closes the database (a failing last commit is thrown, after closing). The promise
   * resolves once the checkpoint worker has closed its connection too: only then may the files be removed or the
   * data directory handed to another process.
   */
  close(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    if (this.flushTimer) systemClock.clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.commitImmediate) clearImmediate(this.commitImmediate);
    this.commitImmediate = undefined;
    if (this.commitTimer) systemClock.clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    try {
      this.flush();
    } finally {
      this.closed = true;
      for (const waiter of this.commitWaiters.splice(0)) waiter.resolve();
      const writer = this.writer;
      this.writer = undefined;
      this.db.close();
      const checkpointer = this.checkpointer;
      // The writer thread's connection closes first: the checkpointer's last checkpoint then finds the WAL whole.
      this.closing = (async () => {
        await writer?.close();
        await checkpointer?.close();
      })();
    }
    return this.closing;
  }

  /**
   * The retention query sorts every finished run, so it runs once per `pruneEvery` finishes instead of on each
   * (it dominated the node's CPU per run under load): between passes up to `pruneEvery - 1` extra runs exist.
   */
  private pruneDue(): boolean {
    this.finishesSincePrune += 1;
    if (this.finishesSincePrune < this.pruneEvery) return false;
    this.finishesSincePrune = 0;
    return true;
  }

  private prune(): void {
    const statements = this.writable();
    this.write(() => executeOps(statements.ops, [this.pruneOp()]));
  }

  private pruneOp(): WriteOp {
    return [HistoryStatement.Prune, [this.retainRuns - 1]];
  }

  /**
   * BEGIN IMMEDIATE … COMMIT, rolled back when the body throws (node:sqlite has no transaction helper). Prepared
   * statements: `exec` parses the SQL text on every call.
   */
  private transaction(statements: Statements, body: () => void): void {
    statements.begin.run();
    try {
      body();
      statements.commit.run();
    } catch (error) {
      try {
        statements.rollback.run();
      } catch {
        // SQLite already rolled back (some errors end the transaction themselves): report the first error.
      }
      throw error;
    }
  }

  private open(): void {
    if (this.closed) throw new HistoryError('closed', 'run history is closed');
  }

  private writable(): Statements {
    this.open();
    if (!this.statements) throw new HistoryError('write_failed', 'run history was opened read-only');
    return this.statements;
  }

  private write(action: () => void): void {
    try {
      action();
    } catch (error) {
      this.failed(message(error));
      throw new HistoryError('write_failed', `cannot write run history: ${message(error)}`, { cause: error });
    }
    this.committed();
  }

  /** A commit failed: back off (doubling up to MAX_RETRY_BACKOFF_MS) and say so, with the counts. */
  private failed(error: string): void {
    this.backoffMs = Math.min(MAX_RETRY_BACKOFF_MS, Math.max(this.flushIntervalMs, this.backoffMs * 2));
    this.retryAt = this.now() + this.backoffMs;
    this.onWriteFailure?.({
      error,
      pendingEvents: this.queuedEvents,
      droppedEvents: this.droppedEvents,
      pendingRuns: this.queuedRuns,
      droppedRuns: this.droppedRuns,
      retryInMs: this.backoffMs,
    });
  }

  private committed(): void {
    this.checkpointer?.committed();
    this.backoffMs = 0;
    this.retryAt = 0;
  }
}

interface Statements {
  begin: SqlStatement;
  commit: SqlStatement;
  rollback: SqlStatement;
  /** HISTORY_STATEMENT_SQL, prepared, in its order. */
  ops: SqlStatement[];
}

function prepare(db: SqlDatabase): Statements {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    ops: HISTORY_STATEMENT_SQL.map((sql) => db.prepare(sql)),
  };
}

/** The run columns a start writes, from id to background. */
function runColumns(run: RunStartRecord): unknown[] {
  return [run.runId, run.adapter, run.target, run.sessionId, run.providerId, run.background ? 1 : 0];
}

/**
 * A run's start. A run id seen before (an edge retry) starts over: its old events would interleave with the new
 * ones.
 */
function startOp(run: RunStartRecord): WriteOp {
  const values = runColumns(run);
  return [
    HistoryStatement.InsertRun,
    [...values, run.startedAt],
    [
      [HistoryStatement.DeleteEvents, [run.runId]],
      [HistoryStatement.RestartRun, [...values.slice(1), run.startedAt, run.runId]],
    ],
  ];
}

function eventOp({ event }: EventWrite): WriteOp {
  return [
    HistoryStatement.InsertEvent,
    [event.runId, event.seq, event.type, JSON.stringify(event.payload ?? null), event.at],
  ];
}

function finishOp(write: QueuedWrite & { kind: 'finish' }): WriteOp {
  return [HistoryStatement.FinishRun, [...outcomeColumns(write.outcome), write.runId]];
}

type EventWrite = QueuedWrite & { kind: 'event' };

interface FoldedEnd {
  /** The run's first start in the batch and its first end after it. */
  start: QueuedWrite & { kind: 'start' };
  finish: QueuedWrite & { kind: 'finish' };
  /** The run's events recorded between the two, in order. */
  events: EventWrite[];
}

/**
 * The runs whose start and end are both in `batch`, the end after the start with no other start of the run in
 * between (a second start deletes the run's events when applied, so such a run is written the long way);
 * undefined when there are none.
 */
function endsOfRunsStartedIn(batch: QueuedWrite[]): Map<string, FoldedEnd> | undefined {
  /** Runs whose first start in the batch has been seen and whose end has not, with their events so far. */
  let open: Map<string, { start: QueuedWrite & { kind: 'start' }; events: EventWrite[] }> | undefined;
  /** Runs started twice in the batch before they ended: none of their writes is folded. */
  let restarted: Set<string> | undefined;
  let ends: Map<string, FoldedEnd> | undefined;
  for (const write of batch) {
    if (write.kind === 'start') {
      const runId = write.run.runId;
      if (open?.delete(runId)) {
        restarted ??= new Set();
        restarted.add(runId);
        continue;
      }
      if (ends?.has(runId) || restarted?.has(runId)) continue;
      open ??= new Map();
      open.set(runId, { start: write, events: [] });
    } else if (write.kind === 'event') {
      open?.get(write.event.runId)?.events.push(write);
    } else {
      const run = open?.get(write.runId);
      if (run === undefined) continue;
      open?.delete(write.runId);
      ends ??= new Map();
      ends.set(write.runId, { start: run.start, finish: write, events: run.events });
    }
  }
  return ends;
}

/**
 * A folded run's events as runs.events_json: undefined when there are none, or when their seqs do not strictly
 * increase (a repeated seq replaces the earlier row; rows keep that rule exact).
 */
function inlineEventsJson(events: EventWrite[]): string | undefined {
  if (events.length === 0) return undefined;
  const inline: InlineEvent[] = [];
  let previous = -Infinity;
  for (const { event } of events) {
    if (!(event.seq > previous)) return undefined;
    previous = event.seq;
    inline.push([event.seq, event.type, event.payload ?? null, event.at]);
  }
  return JSON.stringify(inline);
}

/** Whether the database's runs table has events_json (schema 2). */
function hasInlineEvents(db: SqlDatabase): boolean {
  const columns = db.prepare('PRAGMA table_info(runs)').all() as { name: string }[];
  return columns.some((column) => column.name === 'events_json');
}

function toSummary(row: RunRow): RunSummary {
  return {
    runId: row.id,
    adapter: row.adapter,
    target: row.target,
    sessionId: row.session_id,
    providerId: row.provider_id,
    background: row.background === 1,
    status: toStatus(row.status),
    startedAt: row.started_at,
    endedAt: row.ended_at,
    detail: row.detail,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    usage: row.usage_json ? (JSON.parse(row.usage_json) as Usage) : null,
    eventCount: row.event_count,
  };
}

const STATUSES: readonly RunStatus[] = ['running', 'completed', 'error', 'cancelled', 'interrupted'];

/**
 * A stored status as a RunStatus. `failed` is the error outcome of a history written before schema 3 that a
 * read-only open (which never migrates) reads as it is.
 */
function toStatus(value: string): RunStatus {
  if (value === 'failed') return 'error';
  return (STATUSES as readonly string[]).includes(value) ? (value as RunStatus) : 'interrupted';
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Retention pass interval: every finish for small histories, every tenth of `retainRuns` for large ones. */
/** A run's outcome as the columns status, ended_at, detail, error_code, error_message, usage_json. */
function outcomeColumns(outcome: RunEndRecord): (string | number | null)[] {
  return [
    outcome.status,
    outcome.endedAt,
    outcome.detail,
    outcome.errorCode ?? null,
    outcome.errorMessage ?? null,
    outcome.usage ? JSON.stringify(outcome.usage) : null,
  ];
}

function pruneInterval(retainRuns: number): number {
  return Math.max(1, Math.floor(retainRuns / 10));
}
