// Chooses the run-history backend at run time: better-sqlite3 when its native addon loads in this process (a
// repo checkout, where it was compiled for the local Node), else the built-in node:sqlite (the release
// artifacts: their Node 22 runtime cannot load an addon built for another Node ABI, and no prebuilt binary is
// shipped for the other platforms). Both backends read and write the same database format.
import Database from 'better-sqlite3';
import { HistoryError } from './history-error.js';
import type { RunHistory } from './run-history.js';
import { isNodeSqliteAvailable, nodeSqliteDriver, type HistoryBackend } from './sqlite-driver.js';
import { SqliteRunHistory, type SqliteRunHistoryOptions } from './sqlite-run-history.js';

export type { HistoryBackend };

export interface OpenedRunHistory {
  history: RunHistory & { readonly recoveredRuns: number; readonly path: string };
  backend: HistoryBackend;
  /** Why better-sqlite3 was not used (set only for node:sqlite). */
  fallbackReason?: string;
}

export interface HistoryBackendProbes {
  /** undefined when better-sqlite3's addon loads, else the load error. */
  betterSqliteError(): Error | undefined;
  nodeSqliteAvailable(): boolean;
}

export const defaultHistoryProbes: HistoryBackendProbes = {
  betterSqliteError() {
    try {
      // The addon is loaded lazily by the first Database: an in-memory one proves it loads without touching disk.
      new Database(':memory:').close();
      return undefined;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  },
  nodeSqliteAvailable: isNodeSqliteAvailable,
};

/** Opens the history with the first backend that loads here; HistoryError `open_failed` when neither does. */
export function openRunHistory(
  options: SqliteRunHistoryOptions,
  probes: HistoryBackendProbes = defaultHistoryProbes,
): OpenedRunHistory {
  const loadError = probes.betterSqliteError();
  if (!loadError) return { history: SqliteRunHistory.open(options), backend: 'better-sqlite3' };
  const reason = firstLine(loadError.message);
  if (!probes.nodeSqliteAvailable()) {
    throw new HistoryError(
      'open_failed',
      `cannot open run history ${options.path}: better-sqlite3 does not load (${reason}) and node:sqlite ` +
        `needs Node 22.13 or later (this is ${process.version})`,
      { cause: loadError },
    );
  }
  return {
    history: SqliteRunHistory.open(options, nodeSqliteDriver),
    backend: 'node:sqlite',
    fallbackReason: reason,
  };
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}
