// Stored conversations in SQLite: `<edge.data_dir>/responses.db` (WAL), its own file beside the run records
// (runs.db), one row per (owner, id) with the input items and the final Response as JSON. Each save is one
// synchronous commit made when a response ends — never per streamed token — so a stored turn survives a kill -9
// of the edge; WAL checkpoints run off the event loop (@iop/sqlite-wal). The bounds are kept at each save: rows
// past the TTL are deleted, then the owner's oldest rows (in save order) beyond the per-key cap. A row whose JSON
// no longer parses reads as absent.
import type { WalCheckpointer } from '@iop/sqlite-wal';
import type { Clock } from '../clock.js';
import { openDataDirDatabase, type SqlDatabase, type SqlStatement } from '../governance/usage-database.js';
import type { Logger } from '../logging.js';
import type { ResponseStore, ResponseStoreBounds, StoredResponse } from './response-store.js';

export const RESPONSE_DATABASE_FILE = 'responses.db';

interface Row {
  owner: string;
  id: string;
  previous_id: string | null;
  input: string;
  response: string;
  created_ms: number;
}

export interface SqliteResponseStoreOptions extends ResponseStoreBounds {
  clock: Clock;
  logger: Logger;
}

export class SqliteResponseStore implements ResponseStore {
  private readonly insert: SqlStatement;
  private readonly selectOne: SqlStatement;
  private readonly deleteOne: SqlStatement;
  private readonly deleteExpired: SqlStatement;
  private readonly deleteBeyondCap: SqlStatement;
  private closed = false;

  private constructor(
    private readonly db: SqlDatabase,
    private readonly checkpointer: WalCheckpointer | undefined,
    private readonly options: SqliteResponseStoreOptions,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS responses (
      owner TEXT NOT NULL,
      id TEXT NOT NULL,
      previous_id TEXT,
      input TEXT NOT NULL,
      response TEXT NOT NULL,
      created_ms INTEGER NOT NULL,
      PRIMARY KEY (owner, id)
    )`);
    db.exec('CREATE INDEX IF NOT EXISTS responses_created ON responses (created_ms)');
    db.exec('CREATE INDEX IF NOT EXISTS responses_owner ON responses (owner)');
    this.insert = db.prepare(
      `INSERT OR REPLACE INTO responses (owner, id, previous_id, input, response, created_ms)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.selectOne = db.prepare(
      `SELECT owner, id, previous_id, input, response, created_ms FROM responses
       WHERE owner = ? AND id = ? AND created_ms > ?`,
    );
    this.deleteOne = db.prepare('DELETE FROM responses WHERE owner = ? AND id = ?');
    this.deleteExpired = db.prepare('DELETE FROM responses WHERE created_ms <= ?');
    // REPLACE gives a row a new rowid: rowid order is save order.
    this.deleteBeyondCap = db.prepare(
      `DELETE FROM responses WHERE owner = ? AND rowid NOT IN
       (SELECT rowid FROM responses WHERE owner = ? ORDER BY rowid DESC LIMIT ?)`,
    );
  }

  /** Opens (creating) `<dataDir>/responses.db` in WAL mode with its checkpointer. */
  static open(dataDir: string, options: SqliteResponseStoreOptions): SqliteResponseStore {
    const { db, engine, file, checkpointer } = openDataDirDatabase(
      dataDir,
      RESPONSE_DATABASE_FILE,
      'stored responses database',
      options.logger,
    );
    options.logger.info({ file, engine }, 'stored responses open');
    return new SqliteResponseStore(db, checkpointer, options);
  }

  /** A store over an open database (tests: `:memory:`); no checkpointer. */
  static over(db: SqlDatabase, options: SqliteResponseStoreOptions): SqliteResponseStore {
    return new SqliteResponseStore(db, undefined, options);
  }

  save(record: StoredResponse): void {
    this.insert.run(
      record.owner,
      record.id,
      record.previousResponseId ?? null,
      JSON.stringify(record.inputItems),
      JSON.stringify(record.response),
      record.createdAt,
    );
    this.deleteExpired.run(this.expiredBefore());
    this.deleteBeyondCap.run(record.owner, record.owner, this.options.maxPerKey);
    this.checkpointer?.committed();
  }

  get(owner: string, id: string): StoredResponse | undefined {
    const row = this.selectOne.get(owner, id, this.expiredBefore()) as Row | undefined;
    if (!row) return undefined;
    try {
      return {
        id: row.id,
        owner: row.owner,
        previousResponseId: row.previous_id ?? undefined,
        inputItems: JSON.parse(row.input) as Record<string, unknown>[],
        response: JSON.parse(row.response) as Record<string, unknown>,
        createdAt: Number(row.created_ms),
      };
    } catch {
      this.options.logger.warn({ id }, 'stored response unreadable: answered as absent');
      return undefined;
    }
  }

  remove(owner: string, id: string): boolean {
    const { changes } = this.deleteOne.run(owner, id);
    this.checkpointer?.committed();
    return Number(changes) > 0;
  }

  /** Closes the database; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    await this.checkpointer?.close();
  }

  private expiredBefore(): number {
    return this.options.clock.now() - this.options.ttlMs;
  }
}
