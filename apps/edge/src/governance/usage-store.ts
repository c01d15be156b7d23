// Per-run usage records of the edge in SQLite (`<edge.data_dir>/usage.db`, WAL): who (principal) used what
// (surface, model, provider, node), how much (tokens in/out as the backend reported them), how long (queue ms,
// duration) and how it ended. An agent's model call (a child run) is its own record under its parent's key, naming
// the parent (`parent_run_id`); the agent run's record adds its children's tokens (`child_tokens`) beside its own
// (what it reported less its children's: service/run-supervisor.ts), so sums over input/output count every token
// once. Writes are buffered and committed off the run path: when `batchSize` records wait, or `flushIntervalMs`
// after the first, a timer commits them `SLICE_ROWS` per transaction, one transaction per turn of the event loop, so
// no turn holds the loop for more than one slice (a whole 200-record batch in one turn was a ~0.8 ms stall for
// every request in flight, issue 46); a read commits everything first, at once. Records older
// than `retentionDays` are deleted at open and hourly. WAL checkpoints run off the event loop (@iop/sqlite-wal):
// the store only tells its checkpointer after each commit. What a kill -9 loses: the buffered records, i.e. at
// most `flushIntervalMs` (and fewer than `batchSize`) of runs that ended; every committed batch is kept. Budgets read their spent tokens from here, which is how
// they survive an edge restart.
import type { Clock, ClockTimer } from '../clock.js';
import type { RunOutcomeStatus } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { SqlDatabase, SqlStatement } from './usage-database.js';
import type { WalCheckpointer } from '@iop/sqlite-wal';

/** How a governed run ended (`rejected`: refused by a limit or by the pool before it started). */
export type UsageOutcome = RunOutcomeStatus | 'rejected';

export interface UsageRecord {
  atMs: number;
  runId: string;
  /** Key id; '' for anonymous runs (no keys configured, console, admin). */
  principal: string;
  surface: string;
  model: string;
  provider: string;
  node: string;
  inputTokens: number;
  outputTokens: number;
  queueMs: number;
  durationMs: number;
  outcome: UsageOutcome;
  /** A child run's parent (the agent run); omitted/'' for other runs. */
  parentRunId?: string;
  /** An agent run: its children's tokens (in + out), beside its own; omitted/0 otherwise. */
  childTokens?: number;
}

export const USAGE_GROUPS = ['key', 'model', 'node', 'provider', 'surface'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageQuery {
  by: UsageGroup;
  /** Only records at or after this time (epoch ms); 0 = all kept records. */
  sinceMs: number;
}

export interface UsageRow {
  /** The group's value (key id, model, node or provider; '' = none). */
  group: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  /** Runs per outcome. */
  outcomes: Record<UsageOutcome, number>;
  queueMsTotal: number;
  durationMsTotal: number;
  /** Of `runs`, the agents' model calls (child runs, charged to their parent's key). */
  childRuns?: number;
  /** Epoch ms of the group's latest record; absent from edges older than this field. */
  lastAtMs?: number;
}

export interface UsageStoreOptions {
  db: SqlDatabase;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** Records buffered before a write; default 200. */
  batchSize?: number;
  /** Longest a record waits in the buffer; default 1000 ms. */
  flushIntervalMs?: number;
  /**
   * Checkpoints the WAL off the event loop (startWalCheckpointer), told after each commit and closed after the
   * database; none = SQLite's automatic checkpoint in the commit (an in-memory database in tests).
   */
  checkpointer?: WalCheckpointer;
}

/** 2: parent_run_id and child_tokens (added to a version-1 table at open). */
const SCHEMA_VERSION = 2;
const DAY_MS = 86_400_000;
const PRUNE_INTERVAL_MS = 3_600_000;
/**
 * Records per INSERT statement: one multi-row INSERT binds and steps once for many records (~25 % less CPU per
 * record than one INSERT each); 50 rows × 14 values stay far below SQLite's bound-parameter limit.
 */
const INSERT_ROWS = 50;
/** Records the timer commits per turn of the event loop (one INSERT, one transaction: ~0.2 ms here). */
const SLICE_ROWS = INSERT_ROWS;
const INSERT_COLUMNS = 14;
const INSERT_ROW = `(${new Array<string>(INSERT_COLUMNS).fill('?').join(', ')})`;
const GROUP_COLUMN: Record<UsageGroup, string> = {
  key: 'principal',
  model: 'model',
  node: 'node',
  provider: 'provider',
  surface: 'surface',
};

export class UsageStore {
  private readonly db: SqlDatabase;
  private readonly options: UsageStoreOptions;
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  /** Multi-row INSERTs by row count (1..INSERT_ROWS), prepared when first needed. */
  private readonly inserts = new Map<number, SqlStatement>();
  private pending: UsageRecord[] = [];
  /** The pending write: `flushIntervalMs` after the first record, or 0 (`sliceSoon`) for a full batch's slices. */
  private flushTimer: ClockTimer | undefined;
  private sliceSoon = false;
  private pruneTimer: ClockTimer | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(options: UsageStoreOptions) {
    this.options = options;
    this.db = options.db;
    this.batchSize = options.batchSize ?? 200;
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.db.exec('PRAGMA busy_timeout = 5000');
    this.db.exec('PRAGMA journal_mode = WAL');
    this.db.exec('PRAGMA synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS usage (
      id INTEGER PRIMARY KEY,
      at_ms INTEGER NOT NULL,
      run_id TEXT NOT NULL,
      principal TEXT NOT NULL,
      surface TEXT NOT NULL,
      model TEXT NOT NULL,
      provider TEXT NOT NULL,
      node TEXT NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      queue_ms REAL NOT NULL,
      duration_ms REAL NOT NULL,
      outcome TEXT NOT NULL,
      parent_run_id TEXT NOT NULL DEFAULT '',
      child_tokens INTEGER NOT NULL DEFAULT 0
    )`);
    // A version-1 table (written before child runs existed) gains the two columns; its records keep '' and 0.
    const columns = new Set(
      (this.db.prepare('PRAGMA table_info(usage)').all() as { name: string }[]).map((column) => column.name),
    );
    if (!columns.has('parent_run_id'))
      this.db.exec("ALTER TABLE usage ADD COLUMN parent_run_id TEXT NOT NULL DEFAULT ''");
    if (!columns.has('child_tokens'))
      this.db.exec('ALTER TABLE usage ADD COLUMN child_tokens INTEGER NOT NULL DEFAULT 0');
    this.db.exec('CREATE INDEX IF NOT EXISTS usage_at ON usage (at_ms)');
    this.db.exec('CREATE INDEX IF NOT EXISTS usage_principal_at ON usage (principal, at_ms)');
    this.db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);

    this.prune();
    this.schedulePrune();
  }

  /**
   * Buffers one record; written within `flushIntervalMs`, or on the next turn of the event loop once `batchSize`
   * wait — never inside the caller's turn (the run's end).
   */
  record(record: UsageRecord): void {
    if (this.closed) return;
    this.pending.push(record);
    if (this.pending.length >= this.batchSize) {
      if (!this.sliceSoon) this.scheduleSlice(0);
      return;
    }
    if (this.flushTimer === undefined) this.scheduleSlice(this.flushIntervalMs);
  }

  /** Writes everything buffered now, in one transaction (before a read, at close). */
  flush(): void {
    this.cancelSlice();
    if (this.pending.length === 0 || this.closed) return;
    const batch = this.pending;
    this.pending = [];
    this.write(batch);
  }

  /** The timer's write: at most SLICE_ROWS records, then the next slice on the next turn while more wait. */
  private writeSlice(): void {
    this.flushTimer = undefined;
    this.sliceSoon = false;
    if (this.pending.length === 0 || this.closed) return;
    const batch = this.pending.length <= SLICE_ROWS ? this.pending : this.pending.slice(0, SLICE_ROWS);
    this.pending = batch === this.pending ? [] : this.pending.slice(SLICE_ROWS);
    this.write(batch);
    if (this.pending.length > 0) this.scheduleSlice(0);
  }

  private scheduleSlice(delayMs: number): void {
    this.cancelSlice();
    this.sliceSoon = delayMs === 0;
    this.flushTimer = this.options.clock.setTimeout(() => this.writeSlice(), delayMs);
  }

  private cancelSlice(): void {
    if (this.flushTimer !== undefined) this.options.clock.clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.sliceSoon = false;
  }

  /** Commits `batch` in one transaction. A failed write is logged and the batch dropped (bounded). */
  private write(batch: UsageRecord[]): void {
    try {
      this.db.exec('BEGIN');
      try {
        for (let start = 0; start < batch.length; start += INSERT_ROWS) {
          const rows = Math.min(INSERT_ROWS, batch.length - start);
          const values: unknown[] = new Array<unknown>(rows * INSERT_COLUMNS);
          let at = 0;
          for (let index = start; index < start + rows; index += 1) {
            const record = batch[index];
            values[at++] = record.atMs;
            values[at++] = record.runId;
            values[at++] = record.principal;
            values[at++] = record.surface;
            values[at++] = record.model;
            values[at++] = record.provider;
            values[at++] = record.node;
            values[at++] = record.inputTokens;
            values[at++] = record.outputTokens;
            values[at++] = record.queueMs;
            values[at++] = record.durationMs;
            values[at++] = record.outcome;
            values[at++] = record.parentRunId ?? '';
            values[at++] = record.childTokens ?? 0;
          }
          this.insertStatement(rows).run(...values);
        }
        this.db.exec('COMMIT');
      } catch (error) {
        this.db.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      this.options.logger.error({ err: error, records: batch.length }, 'writing usage records failed');
      return;
    }
    this.options.checkpointer?.committed();
  }

  /** The INSERT of `rows` records (one statement per row count, kept). */
  private insertStatement(rows: number): SqlStatement {
    let statement = this.inserts.get(rows);
    if (!statement) {
      statement = this.db.prepare(
        `INSERT INTO usage (at_ms, run_id, principal, surface, model, provider, node, input_tokens, output_tokens,
          queue_ms, duration_ms, outcome, parent_run_id, child_tokens) VALUES ${new Array<string>(rows).fill(INSERT_ROW).join(', ')}`,
      );
      this.inserts.set(rows, statement);
    }
    return statement;
  }

  /** Totals grouped by key, model, node, provider or surface, largest token use first. */
  summary(query: UsageQuery): UsageRow[] {
    this.flush();
    const column = GROUP_COLUMN[query.by];
    const rows = this.db
      .prepare(
        `SELECT ${column} AS grp, outcome, COUNT(*) AS runs, SUM(input_tokens) AS input_tokens,
           SUM(output_tokens) AS output_tokens, SUM(queue_ms) AS queue_ms, SUM(duration_ms) AS duration_ms,
           SUM(parent_run_id != '') AS child_runs, MAX(at_ms) AS last_at_ms
         FROM usage WHERE at_ms >= ? GROUP BY ${column}, outcome`,
      )
      .all(query.sinceMs) as {
      grp: string;
      outcome: UsageOutcome;
      runs: number;
      input_tokens: number;
      output_tokens: number;
      queue_ms: number;
      duration_ms: number;
      child_runs: number;
      last_at_ms: number;
    }[];
    const groups = new Map<string, UsageRow>();
    for (const row of rows) {
      let group = groups.get(row.grp);
      if (!group) {
        group = {
          group: row.grp,
          runs: 0,
          inputTokens: 0,
          outputTokens: 0,
          outcomes: { completed: 0, error: 0, cancelled: 0, rejected: 0 },
          queueMsTotal: 0,
          durationMsTotal: 0,
          childRuns: 0,
          lastAtMs: 0,
        };
        groups.set(row.grp, group);
      }
      group.runs += Number(row.runs);
      group.inputTokens += Number(row.input_tokens);
      group.outputTokens += Number(row.output_tokens);
      group.queueMsTotal += Number(row.queue_ms);
      group.durationMsTotal += Number(row.duration_ms);
      group.childRuns = (group.childRuns ?? 0) + Number(row.child_runs);
      group.lastAtMs = Math.max(group.lastAtMs ?? 0, Number(row.last_at_ms));
      if (row.outcome in group.outcomes) group.outcomes[row.outcome] += Number(row.runs);
    }
    return [...groups.values()].sort(
      (first, second) =>
        second.inputTokens + second.outputTokens - (first.inputTokens + first.outputTokens) ||
        first.group.localeCompare(second.group),
    );
  }

  /** Tokens (in + out) a principal used since `sinceMs` (budgets after a restart). */
  tokensSince(principal: string, sinceMs: number): number {
    this.flush();
    const row = this.db
      .prepare(
        'SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens FROM usage WHERE principal = ? AND at_ms >= ?',
      )
      .get(principal, sinceMs) as { tokens: number | bigint } | undefined;
    return Number(row?.tokens ?? 0);
  }

  /** Deletes records older than the retention period. */
  prune(): number {
    if (this.closed) return 0;
    const cutoff = this.options.clock.now() - this.options.retentionDays * DAY_MS;
    const result = this.db.prepare('DELETE FROM usage WHERE at_ms < ?').run(cutoff);
    if (Number(result.changes) > 0) this.options.checkpointer?.committed();
    return Number(result.changes);
  }

  /**
   * Writes what is buffered and closes the database. Idempotent. Resolves once the checkpoint worker has finished
   * with the file too (the data directory may be removed then).
   */
  close(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    this.flush();
    this.closed = true;
    if (this.pruneTimer !== undefined) this.options.clock.clearTimeout(this.pruneTimer);
    this.pruneTimer = undefined;
    this.db.close();
    this.closing = this.options.checkpointer?.close() ?? Promise.resolve();
    return this.closing;
  }

  private schedulePrune(): void {
    this.pruneTimer = this.options.clock.setTimeout(() => {
      try {
        this.prune();
      } catch (error) {
        this.options.logger.warn({ err: error }, 'pruning usage records failed');
      }
      if (!this.closed) this.schedulePrune();
    }, PRUNE_INTERVAL_MS);
  }
}
