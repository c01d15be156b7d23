// The synchronous SQLite surface the run history needs, and the two engines that provide it: better-sqlite3 (a
// repo checkout, compiled for the local Node) and Node's built-in node:sqlite (Node >= 22.13: the release
// artifacts, whose runtime cannot load an addon built for another Node ABI). Both read and write the same file.
import fs from 'node:fs';
import Database from 'better-sqlite3';

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

export type HistoryBackend = 'better-sqlite3' | 'node:sqlite';

export interface SqliteDriver {
  readonly backend: HistoryBackend;
  /** Opens the database file, creating it unless `readonly` (a read-only open of a missing file throws). */
  open(file: string, readonly: boolean): SqlDatabase;
}

export const betterSqliteDriver: SqliteDriver = {
  backend: 'better-sqlite3',
  open: (file, readonly) => new Database(file, { readonly, fileMustExist: readonly }),
};

/** The part of node:sqlite's API used here (typed locally: @types/node 20 does not describe node:sqlite). */
interface NodeSqliteModule {
  DatabaseSync: new (
    location: string,
    options?: { readOnly?: boolean; enableForeignKeyConstraints?: boolean },
  ) => SqlDatabase;
}

/**
 * node:sqlite of this process, or undefined (Node < 22.13). Loaded with process.getBuiltinModule so that
 * importing this file never fails on Node 20, which has no node:sqlite.
 */
export function loadNodeSqlite(): NodeSqliteModule | undefined {
  try {
    const loaded = process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
    return loaded && typeof loaded.DatabaseSync === 'function' ? loaded : undefined;
  } catch {
    return undefined;
  }
}

export function isNodeSqliteAvailable(): boolean {
  return loadNodeSqlite() !== undefined;
}

export const nodeSqliteDriver: SqliteDriver = {
  backend: 'node:sqlite',
  open(file, readonly) {
    const sqlite = loadNodeSqlite();
    if (!sqlite) throw new Error(`node:sqlite needs Node 22.13 or later (this is ${process.version})`);
    // node:sqlite has no fileMustExist: without this check a read-only open of a missing file would fail later.
    if (readonly && !fs.existsSync(file)) throw new Error('unable to open database file: no such file');
    return new sqlite.DatabaseSync(file, { readOnly: readonly, enableForeignKeyConstraints: true });
  },
};
