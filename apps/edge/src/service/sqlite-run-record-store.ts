// The run registry's durable record in SQLite: `<edge.data_dir>/runs.db` (WAL), one row per (kind, principal, id)
// with the state JSON, the ended flag and times, and the edge id and boot id of the process that wrote it. Every
// write is its own synchronous commit (the registry writes on add, state change and end — never per streamed
// token), so what a client was answered survives a kill -9 of the edge. WAL checkpoints run off the event loop
// (@iop/sqlite-wal). The registry bounds the rows (it removes what it forgets); open() also drops rows whose
// JSON no longer parses, so one damaged row never stops the edge.
//
// Column `resume` (added by a migration when an older runs.db lacks it: ALTER TABLE, so the file of an earlier
// version opens with its rows, their `resume` null) holds a not-yet-dispatched run's resume payload as JSON, null
// otherwise; a payload that no longer parses is read as none (the run then ends as interrupted, its row is kept).
import type { WalCheckpointer } from '@iop/sqlite-wal';
import { openDataDirDatabase, type SqlDatabase, type SqlStatement } from '../governance/usage-database.js';
import type { Logger } from '../logging.js';
import { isRunKey, type RunKey } from '../placement/run-directory.js';
import type { RunRecordStore, StoredRun } from './run-record-store.js';

export const RUN_DATABASE_FILE = 'runs.db';

interface Row {
  kind: string;
  principal: string;
  id: string;
  state: string;
  created_ms: number;
  updated_ms: number;
  ended_ms: number | null;
  edge_id: string;
  boot: string;
  resume: string | null;
}

export class SqliteRunRecordStore implements RunRecordStore {
  private readonly insert: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly selectAll: SqlStatement;
  private closed = false;

  private constructor(
    private readonly db: SqlDatabase,
    private readonly checkpointer: WalCheckpointer | undefined,
    private readonly logger: Logger,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS runs (
      kind TEXT NOT NULL,
      principal TEXT NOT NULL,
      id TEXT NOT NULL,
      state TEXT NOT NULL,
      created_ms INTEGER NOT NULL,
      updated_ms INTEGER NOT NULL,
      ended_ms INTEGER,
      edge_id TEXT NOT NULL,
      boot TEXT NOT NULL,
      PRIMARY KEY (kind, principal, id)
    )`);
    db.exec('CREATE INDEX IF NOT EXISTS runs_created ON runs (created_ms)');
    addResumeColumn(db);
    this.insert = db.prepare(
      `INSERT OR REPLACE INTO runs (kind, principal, id, state, created_ms, updated_ms, ended_ms, edge_id, boot, resume)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.deleteOne = db.prepare('DELETE FROM runs WHERE kind = ? AND principal = ? AND id = ?');
    this.selectAll = db.prepare(
      'SELECT kind, principal, id, state, created_ms, updated_ms, ended_ms, edge_id, boot, resume FROM runs ORDER BY created_ms',
    );
  }

  /** Opens (creating) `<dataDir>/runs.db` in WAL mode with its checkpointer. */
  static open(dataDir: string, logger: Logger): SqliteRunRecordStore {
    const { db, engine, file, checkpointer } = openDataDirDatabase(
      dataDir,
      RUN_DATABASE_FILE,
      'run records database',
      logger,
    );
    logger.info({ file, engine }, 'run records open');
    return new SqliteRunRecordStore(db, checkpointer, logger);
  }

  /** A store over an open database (tests: `:memory:`); no checkpointer. */
  static over(db: SqlDatabase, logger: Logger): SqliteRunRecordStore {
    return new SqliteRunRecordStore(db, undefined, logger);
  }

  save(record: StoredRun): void {
    this.insert.run(
      record.key.kind,
      record.key.principal,
      record.key.id,
      JSON.stringify(record.state),
      record.createdAt,
      record.updatedAt,
      record.endedAt ?? null,
      record.edgeId,
      record.boot,
      record.resume === undefined ? null : JSON.stringify(record.resume),
    );
    this.checkpointer?.committed();
  }

  remove(key: RunKey): void {
    this.deleteOne.run(key.kind, key.principal, key.id);
    this.checkpointer?.committed();
  }

  load(): StoredRun[] {
    const records: StoredRun[] = [];
    for (const row of this.selectAll.all() as Row[]) {
      const key = { kind: row.kind, principal: row.principal, id: row.id };
      let state: unknown;
      try {
        state = JSON.parse(row.state) as unknown;
      } catch {
        state = undefined;
      }
      if (!isRunKey(key) || state === undefined) {
        this.logger.warn({ kind: row.kind, id: row.id }, 'dropping an unreadable run record');
        this.deleteOne.run(row.kind, row.principal, row.id);
        continue;
      }
      const resume = parseResume(row.resume);
      records.push({
        key,
        state,
        createdAt: Number(row.created_ms),
        updatedAt: Number(row.updated_ms),
        endedAt: row.ended_ms === null ? undefined : Number(row.ended_ms),
        edgeId: row.edge_id,
        boot: row.boot,
        ...(resume !== undefined ? { resume } : {}),
      });
    }
    return records;
  }

  /** Closes the database (after the registry's last write); idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    await this.checkpointer?.close();
  }
}

/** Migration: a runs.db written before resume payloads existed gets the column (its rows: none). */
function addResumeColumn(db: SqlDatabase): void {
  const columns = db.prepare('PRAGMA table_info(runs)').all() as { name: string }[];
  if (!columns.some((column) => column.name === 'resume')) db.exec('ALTER TABLE runs ADD COLUMN resume TEXT');
}

/** A stored payload, or undefined for none or one that no longer parses (that run cannot be resumed). */
function parseResume(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
