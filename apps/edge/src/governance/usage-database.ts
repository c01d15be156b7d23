// Opens the usage database (and the run records' database, service/sqlite-run-record-store.ts) with the first SQLite engine that loads in this process: better-sqlite3 (a repo
// checkout, compiled for the local Node) or the built-in node:sqlite (the release edge, a Node 22 single
// executable that cannot load an addon). Both engines read and write the same file. The node's run history makes
// the same choice (apps/node/src/history/sqlite-driver.ts); the edge keeps its own few lines because apps never
// import each other.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWalCheckpointer, type SqliteEngine, type WalCheckpointer } from '@iop/sqlite-wal';
import type { Logger } from '../logging.js';

export interface SqlStatement {
  run(...parameters: unknown[]): { changes: number | bigint };
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
}

export interface SqlDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqlStatement;
  close(): void;
}

export interface OpenedDatabase {
  db: SqlDatabase;
  engine: SqliteEngine;
}

interface NodeSqliteModule {
  DatabaseSync: new (location: string) => SqlDatabase;
}

/** A database file of the edge's data dir with its WAL checkpointer (runs.db, responses.db, a2a-push.db). */
export interface DataDirDatabase extends OpenedDatabase {
  file: string;
  checkpointer: WalCheckpointer;
}

/**
 * Opens (creating) `<dataDir>/<fileName>` (the dir 0700) with the first engine that loads, and starts its WAL
 * checkpointer (`label` names it in errors and in the checkpointer's warnings).
 */
export function openDataDirDatabase(
  dataDir: string,
  fileName: string,
  label: string,
  logger: Logger,
): DataDirDatabase {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, fileName);
  const { db, engine } = openEdgeDatabase(file, label);
  const checkpointer = startWalCheckpointer({
    db,
    file,
    engine,
    betterSqlitePath:
      engine === 'better-sqlite3' ? createRequire(import.meta.url).resolve('better-sqlite3') : undefined,
    onFailure: (error, when) => logger.warn({ err: error, when }, `${label} checkpoint failed`),
  });
  return { db, engine, file, checkpointer };
}

/** Opens (creating) the usage database `file`; throws when neither engine loads, naming both causes. */
export function openUsageDatabase(file: string): OpenedDatabase {
  return openEdgeDatabase(file, 'usage database');
}

/** Opens (creating) the SQLite database `file` (`label` names it in errors) with the first engine that loads. */
export function openEdgeDatabase(file: string, label: string): OpenedDatabase {
  let betterError: unknown;
  try {
    return { db: new Database(file), engine: 'better-sqlite3' };
  } catch (error) {
    betterError = error;
  }
  const sqlite = loadNodeSqlite();
  if (!sqlite) {
    const reason =
      betterError instanceof Error ? (betterError.message.split('\n')[0] ?? '') : String(betterError);
    throw new Error(
      `cannot open ${label} ${file}: better-sqlite3 does not load (${reason}) and node:sqlite needs ` +
        `Node 22.13 or later (this is ${process.version})`,
      { cause: betterError },
    );
  }
  return { db: new sqlite.DatabaseSync(file), engine: 'node:sqlite' };
}

function loadNodeSqlite(): NodeSqliteModule | undefined {
  try {
    const loaded = process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
    return loaded && typeof loaded.DatabaseSync === 'function' ? loaded : undefined;
  } catch {
    return undefined;
  }
}
