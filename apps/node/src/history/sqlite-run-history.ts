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
// WAL checkpoints run in a worker thread (@iop/sqlite-wal, at most one per 2 s while commits come): the writer's
// automatic checkpoint is off, so no commit on the event loop copies the WAL into the database file. A committed write is
// in the WAL either way, so this changes nothing of what a kill -9 can lose.
//
// What a kill -9 can lose: the writes still queued, i.e. the run starts and ends recorded during the event-loop
// turn in progress (within `commitIntervalMs` of the previous commit: during that interval), and events younger
// than `flushIntervalMs` (at most `batchSize` of them) of runs that have
// not ended. Commits apply the queue in order and whole, so the database always holds a prefix of what was
// recorded: a run is absent, `running` (marked `interrupted` on the next open, with its committed events
// 1..n), or ended with all its events. Retention keeps the newest `retainRuns` finished runs (with their
// events); running runs are never pruned.
//
// A write that keeps failing (disk full, database locked by a stuck reader) must not stop runs or grow memory:
// at most `maxPendingEvents` events and `maxPendingEvents` run starts/ends wait in memory (later ones are
// dropped and counted), a failed background commit is retried only after a backoff (doubling up to 30 s), and
// `onWriteFailure` hears of each failed attempt with the counts, so the node logs one line per attempt rather
// than one per event.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWalCheckpointer, type WalCheckpointer, type WalCheckpointerOptions } from '@iop/sqlite-wal';
import type { Usage } from '@iop/wire';
import { HistoryError } from './history-error.js';
import type {
  RunEventRecord,
  RunHistory,
  RunOutcome,
  RunStartRecord,
  RunStatus,
  RunSummary,
} from './run-history.js';
import {
  betterSqliteDriver,
  type HistoryBackend,
  type SqlDatabase,
  type SqliteDriver,
} from './sqlite-driver.js';

export const HISTORY_FILE_NAME = 'history.db';
export const DEFAULT_RETAIN_RUNS = 1000;
/** 2: runs.events_json (the events of a run committed whole, see `apply`). */
const SCHEMA_VERSION = 2;
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

/** One recorded write waiting for its commit; the queue is applied in order. */
type QueuedWrite =
  | { kind: 'start'; run: RunStartRecord }
  | { kind: 'event'; event: RunEventRecord }
  | { kind: 'finish'; runId: string; outcome: RunOutcome };

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
  private flushTimer: NodeJS.Timeout | undefined;
  /** The commit of queued run starts/ends, when one is scheduled: at the end of this turn, or on a timer. */
  private commitImmediate: NodeJS.Immediate | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  private readonly commitQueued = (): void => {
    this.commitImmediate = undefined;
    this.commitTimer = undefined;
    this.backgroundFlush();
  };
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly statements: ReturnType<typeof prepare> | undefined;

  private constructor(
    db: SqlDatabase,
    backend: HistoryBackend,
    options: SqliteRunHistoryOptions,
    recoveredRuns: number,
    private readonly checkpointer?: WalCheckpointer,
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
    this.now = options.now ?? Date.now;
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
    let checkpointer: WalCheckpointer | undefined;
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
      if (readonly)
        return new SqliteRunHistory(db, driver.backend, options, 0, undefined, hasInlineEvents(db));
      db.exec('PRAGMA journal_mode = WAL');
      // NORMAL in WAL mode is crash-safe for the database; only the last commits may be lost on power failure.
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec('PRAGMA foreign_keys = ON');
      db.exec(SCHEMA);
      // A database written by schema 1 has no events_json yet (CREATE TABLE IF NOT EXISTS left it as it was).
      if (!hasInlineEvents(db)) db.exec('ALTER TABLE runs ADD COLUMN events_json TEXT');
      db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
      const now = (options.now ?? Date.now)();
      const recovered = Number(
        db
          .prepare(
            `UPDATE runs SET status = 'interrupted', ended_at = ?, detail = ? WHERE status = 'running'`,
          )
          .run(now, INTERRUPTED_DETAIL).changes,
      );
      checkpointer = (options.startCheckpointer ?? startWalCheckpointer)({
        db,
        file: options.path,
        engine: driver.backend,
        betterSqlitePath:
          driver.backend === 'better-sqlite3'
            ? createRequire(import.meta.url).resolve('better-sqlite3')
            : undefined,
        onFailure: options.onCheckpointFailure,
      });
      const history = new SqliteRunHistory(db, driver.backend, options, recovered, checkpointer);
      history.prune();
      return history;
    } catch (error) {
      db.close();
      void checkpointer?.close();
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
    if (this.queuedEvents >= this.batchSize && this.now() >= this.retryAt) {
      this.backgroundFlush();
      return;
    }
    this.scheduleFlush();
  }

  /** Queues the run's end, committed (with its events) at the end of this event-loop turn. Never throws. */
  finish(runId: string, outcome: RunOutcome): void {
    this.writable();
    this.queueRunWrite({ kind: 'finish', runId, outcome });
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
    if (this.commitImmediate || this.commitTimer) return;
    if (this.now() < this.retryAt) {
      // Writes are failing: the backoff timer retries; a commit per turn would hammer a full disk.
      this.scheduleFlush();
      return;
    }
    const wait = this.lastCommitAt + this.commitIntervalMs - performance.now();
    if (wait <= 0) this.commitImmediate = setImmediate(this.commitQueued);
    else this.commitTimer = setTimeout(this.commitQueued, Math.ceil(wait));
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.queue.length === 0) return;
    const delay = Math.max(this.flushIntervalMs, this.retryAt - this.now());
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.backgroundFlush();
    }, delay);
    this.flushTimer.unref();
  }

  /** A flush whose failure is reported (onWriteFailure) and retried after the backoff, not thrown. */
  private backgroundFlush(): void {
    try {
      this.flush();
    } catch {
      // Reported by write(); the events stay pending (bounded) for the retry scheduled below.
    }
    this.scheduleFlush();
  }

  /** Commits every queued write now, in one transaction. Throws HistoryError `write_failed` when it fails. */
  flush(): void {
    if (this.closed || this.readonly || this.queue.length === 0) return;
    const statements = this.writable();
    const batch = this.queue;
    this.write(() => {
      this.transaction(statements, () => this.apply(statements, batch));
    });
    // Only drop the batch once it is committed, so a failed write can be retried. Nothing is queued while the
    // synchronous commit runs.
    this.lastCommitAt = performance.now();
    this.queue = [];
    this.queuedEvents = 0;
    this.queuedRuns = 0;
  }

  private apply(statements: ReturnType<typeof prepare>, batch: QueuedWrite[]): void {
    let prune = false;
    // Runs that start and end within this batch (most of them under load) are inserted ended, with the events
    // recorded between the two (runs.events_json): one statement instead of an insert, an update and a row per
    // event (each event row cost ~6 µs of CPU, the run row ~11). Only the first start of a run id in the batch
    // is folded.
    const ends = endsOfRunsStartedIn(batch);
    /** Event writes already written inside their run's row. */
    let foldedEvents: Set<QueuedWrite> | undefined;
    for (const write of batch) {
      switch (write.kind) {
        case 'start': {
          // Positional parameters throughout: binding named ones costs a property lookup per column.
          const { run } = write;
          const background = run.background ? 1 : 0;
          const values = [run.runId, run.adapter, run.target, run.sessionId, run.providerId, background];
          const end = ends?.get(run.runId);
          if (end !== undefined && end.start === write) {
            const { outcome } = end.finish;
            const inline = inlineEventsJson(end.events);
            const inserted = statements.insertEndedRun.run(
              ...values,
              run.startedAt,
              ...outcomeColumns(outcome),
              inline ?? null,
            );
            if (Number(inserted.changes) === 1) {
              end.folded = true;
              if (inline !== undefined) {
                foldedEvents ??= new Set();
                for (const event of end.events) foldedEvents.add(event);
              }
              break;
            }
          }
          if (Number(statements.insertRun.run(...values, run.startedAt).changes) === 0) {
            // A run id seen before (an edge retry) starts over: its old events would interleave with the new
            // ones. Rare, so the common start is one statement.
            statements.deleteEvents.run(run.runId);
            statements.restartRun.run(...values.slice(1), run.startedAt, run.runId);
          }
          break;
        }
        case 'event': {
          if (foldedEvents?.has(write)) break;
          const { event } = write;
          statements.insertEvent.run(
            event.runId,
            event.seq,
            event.type,
            JSON.stringify(event.payload ?? null),
            event.at,
          );
          break;
        }
        case 'finish': {
          const { outcome } = write;
          if (this.pruneDue()) prune = true;
          // Already written with its start (see above).
          if (ends?.get(write.runId)?.finish === write && ends.get(write.runId)?.folded) break;
          statements.finishRun.run(...outcomeColumns(outcome), write.runId);
          break;
        }
        default: {
          const unreachable: never = write;
          throw new Error(`unknown history write ${JSON.stringify(unreachable)}`);
        }
      }
    }
    if (prune) this.pruneIn(statements);
  }

  /** Reads see every write recorded so far: commit the queue first (a failing write is reported, not thrown). */
  private commitBeforeRead(): void {
    if (this.readonly || this.queue.length === 0) return;
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
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.commitImmediate) clearImmediate(this.commitImmediate);
    this.commitImmediate = undefined;
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    try {
      this.flush();
    } finally {
      this.closed = true;
      this.db.close();
      this.closing = this.checkpointer?.close() ?? Promise.resolve();
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
    this.write(() => this.pruneIn(statements));
  }

  private pruneIn(statements: ReturnType<typeof prepare>): void {
    statements.prune.run(this.retainRuns - 1);
  }

  /**
   * BEGIN IMMEDIATE … COMMIT, rolled back when the body throws (node:sqlite has no transaction helper). Prepared
   * statements: `exec` parses the SQL text on every call.
   */
  private transaction(statements: ReturnType<typeof prepare>, body: () => void): void {
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

  private writable(): ReturnType<typeof prepare> {
    this.open();
    if (!this.statements) throw new HistoryError('write_failed', 'run history was opened read-only');
    return this.statements;
  }

  private write(action: () => void): void {
    try {
      action();
    } catch (error) {
      this.backoffMs = Math.min(MAX_RETRY_BACKOFF_MS, Math.max(this.flushIntervalMs, this.backoffMs * 2));
      this.retryAt = this.now() + this.backoffMs;
      this.onWriteFailure?.({
        error: message(error),
        pendingEvents: this.queuedEvents,
        droppedEvents: this.droppedEvents,
        pendingRuns: this.queuedRuns,
        droppedRuns: this.droppedRuns,
        retryInMs: this.backoffMs,
      });
      throw new HistoryError('write_failed', `cannot write run history: ${message(error)}`, { cause: error });
    }
    this.checkpointer?.committed();
    this.backoffMs = 0;
    this.retryAt = 0;
  }
}

function prepare(db: SqlDatabase) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    insertEndedRun: db.prepare(
      `INSERT OR IGNORE INTO runs (id, adapter, target, session_id, provider_id, background, started_at, status,
         ended_at, detail, error_code, error_message, usage_json, events_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertRun: db.prepare(
      `INSERT OR IGNORE INTO runs (id, adapter, target, session_id, provider_id, background, status, started_at)
       VALUES (?, ?, ?, ?, ?, ?, 'running', ?)`,
    ),
    restartRun: db.prepare(
      `UPDATE runs SET adapter = ?, target = ?, session_id = ?, provider_id = ?, background = ?,
         status = 'running', started_at = ?, ended_at = NULL, detail = '', error_code = NULL,
         error_message = NULL, usage_json = NULL, events_json = NULL WHERE id = ?`,
    ),
    deleteEvents: db.prepare(`DELETE FROM run_events WHERE run_id = ?`),
    insertEvent: db.prepare(
      `INSERT OR REPLACE INTO run_events (run_id, seq, type, payload_json, at) VALUES (?, ?, ?, ?, ?)`,
    ),
    finishRun: db.prepare(
      `UPDATE runs SET status = ?, ended_at = ?, detail = ?, error_code = ?, error_message = ?, usage_json = ?
       WHERE id = ?`,
    ),
    // Deletes the finished runs older than the retainRuns-th newest one: one walk down runs_by_start to find it
    // and a range delete, instead of sorting every finished run into a NOT IN set (half the cost per pass).
    prune: db.prepare(
      `DELETE FROM runs WHERE status != 'running' AND (started_at, rowid) < (
         SELECT started_at, rowid FROM runs WHERE status != 'running'
         ORDER BY started_at DESC, rowid DESC LIMIT 1 OFFSET ?)`,
    ),
  };
}

type EventWrite = QueuedWrite & { kind: 'event' };

interface FoldedEnd {
  /** The run's first start in the batch and its first end after it. */
  start: QueuedWrite & { kind: 'start' };
  finish: QueuedWrite & { kind: 'finish' };
  /** The run's events recorded between the two, in order. */
  events: EventWrite[];
  /** The start was written with the end's outcome. */
  folded: boolean;
}

/** The runs whose start and end are both in `batch` (the end after the start); undefined when there are none. */
function endsOfRunsStartedIn(batch: QueuedWrite[]): Map<string, FoldedEnd> | undefined {
  /**
   * Runs whose first start in the batch has been seen and whose end has not, with their events so far (none
   * kept once a second start of the run came in between: that start deletes the run's events when applied).
   */
  let open:
    Map<string, { start: QueuedWrite & { kind: 'start' }; events: EventWrite[] | undefined }> | undefined;
  let ends: Map<string, FoldedEnd> | undefined;
  for (const write of batch) {
    if (write.kind === 'start') {
      const runId = write.run.runId;
      const run = open?.get(runId);
      if (run !== undefined) run.events = undefined;
      if (run !== undefined || ends?.has(runId)) continue;
      open ??= new Map();
      open.set(runId, { start: write, events: [] });
    } else if (write.kind === 'event') {
      open?.get(write.event.runId)?.events?.push(write);
    } else {
      const run = open?.get(write.runId);
      if (run === undefined) continue;
      open?.delete(write.runId);
      ends ??= new Map();
      ends.set(write.runId, { start: run.start, finish: write, events: run.events ?? [], folded: false });
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

const STATUSES: readonly RunStatus[] = ['running', 'completed', 'failed', 'cancelled', 'interrupted'];

function toStatus(value: string): RunStatus {
  return (STATUSES as readonly string[]).includes(value) ? (value as RunStatus) : 'interrupted';
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Retention pass interval: every finish for small histories, every tenth of `retainRuns` for large ones. */
/** A run's outcome as the columns status, ended_at, detail, error_code, error_message, usage_json. */
function outcomeColumns(outcome: RunOutcome): (string | number | null)[] {
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
