// Which API key a CLI workspace belongs to. The first keyed session that works in a directory binds it to its key
// (the principal digest of its session id, @iop/wire session-owner.ts), across sessions; the cli adapter refuses
// any other key a directory that is, contains or lies inside a bound one (workspace-tenancy.ts). The bindings live
// beside the run history, in its SQLite file (table `workspace_bindings`, own connection), so they survive
// sessions and node restarts for as long as the node keeps its history; MemoryWorkspaceBindings is the same for
// one process (tests, a node without a history).
import { systemClock } from '@iop/clock';
import type { SqlDatabase, SqliteDriver, SqlStatement } from './sqlite-driver.js';

export interface WorkspaceBinding {
  /** Real, absolute path of the directory. */
  workspace: string;
  /** Principal digest of the key it belongs to. */
  owner: string;
}

export interface WorkspaceBindings {
  /** Every binding (a node holds a few per key). */
  list(): WorkspaceBinding[];
  /** Binds `workspace` to `owner` unless it is bound already; returns the owner it is bound to now. */
  bind(workspace: string, owner: string): string;
}

export class MemoryWorkspaceBindings implements WorkspaceBindings {
  private readonly owners = new Map<string, string>();

  list(): WorkspaceBinding[] {
    return [...this.owners].map(([workspace, owner]) => ({ workspace, owner }));
  }

  bind(workspace: string, owner: string): string {
    const bound = this.owners.get(workspace);
    if (bound !== undefined) return bound;
    this.owners.set(workspace, owner);
    return owner;
  }
}

const CREATE_SQL = `CREATE TABLE IF NOT EXISTS workspace_bindings (
  workspace TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  bound_at INTEGER NOT NULL
)`;

/**
 * WorkspaceBindings in the history's SQLite file. Writes are synchronous and rare (one per new directory), so a
 * check and the bind that follows it happen in one event-loop turn: two keys cannot both claim one directory.
 */
export class SqliteWorkspaceBindings implements WorkspaceBindings {
  private readonly selectAll: SqlStatement;
  private readonly insert: SqlStatement;
  private readonly selectOwner: SqlStatement;
  private closed = false;

  private constructor(
    private readonly db: SqlDatabase,
    private readonly now: () => number,
  ) {
    this.selectAll = db.prepare('SELECT workspace, owner FROM workspace_bindings');
    this.insert = db.prepare(
      'INSERT OR IGNORE INTO workspace_bindings (workspace, owner, bound_at) VALUES (?, ?, ?)',
    );
    this.selectOwner = db.prepare('SELECT owner FROM workspace_bindings WHERE workspace = ?');
  }

  /** Opens (creating the table in) the history database `file`, with the driver the history uses. */
  static open(
    file: string,
    driver: SqliteDriver,
    now: () => number = () => systemClock.now(),
  ): SqliteWorkspaceBindings {
    const db = driver.open(file, false);
    try {
      // The history's writer holds the file at times: wait for it rather than fail a session.
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec(CREATE_SQL);
      return new SqliteWorkspaceBindings(db, now);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  list(): WorkspaceBinding[] {
    return (this.selectAll.all() as { workspace: string; owner: string }[]).map((row) => ({
      workspace: row.workspace,
      owner: row.owner,
    }));
  }

  bind(workspace: string, owner: string): string {
    this.insert.run(workspace, owner, this.now());
    const row = this.selectOwner.get(workspace) as { owner: string } | undefined;
    return row?.owner ?? owner;
  }

  /** Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
