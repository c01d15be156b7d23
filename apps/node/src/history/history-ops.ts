// A history commit as data: the statements a batch of run starts, events and ends becomes, each a statement
// index, its positional parameters and, for the statements that may find the run already there, what to run
// instead when they change no row. The same list is applied on the event loop (an engine the writer thread
// cannot open, e.g. a test's fault-injecting driver) or posted to the writer thread (history-writer-thread.ts),
// so what a commit writes is decided in one place and the thread only executes it.

/** One statement of a commit: [statement, parameters, ops run instead when the statement changed no row]. */
export type WriteOp = [statement: HistoryStatement, parameters: unknown[], otherwise?: WriteOp[]];

/** Indexes into HISTORY_STATEMENT_SQL. */
export const HistoryStatement = {
  InsertEndedRun: 0,
  InsertRun: 1,
  RestartRun: 2,
  DeleteEvents: 3,
  InsertEvent: 4,
  FinishRun: 5,
  Prune: 6,
  ReplaceEndedRun: 7,
} as const;
export type HistoryStatement = (typeof HistoryStatement)[keyof typeof HistoryStatement];

/**
 * The statements a commit may run, by HistoryStatement. Positional parameters throughout: binding named ones costs
 * a property lookup per column.
 */
export const HISTORY_STATEMENT_SQL: readonly string[] = [
  `INSERT OR IGNORE INTO runs (id, adapter, target, session_id, provider_id, background, started_at, status,
     ended_at, detail, error_code, error_message, usage_json, events_json)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  `INSERT OR IGNORE INTO runs (id, adapter, target, session_id, provider_id, background, status, started_at)
   VALUES (?, ?, ?, ?, ?, ?, 'running', ?)`,
  `UPDATE runs SET adapter = ?, target = ?, session_id = ?, provider_id = ?, background = ?,
     status = 'running', started_at = ?, ended_at = NULL, detail = '', error_code = NULL,
     error_message = NULL, usage_json = NULL, events_json = NULL WHERE id = ?`,
  `DELETE FROM run_events WHERE run_id = ?`,
  `INSERT OR REPLACE INTO run_events (run_id, seq, type, payload_json, at) VALUES (?, ?, ?, ?, ?)`,
  `UPDATE runs SET status = ?, ended_at = ?, detail = ?, error_code = ?, error_message = ?, usage_json = ?
   WHERE id = ?`,
  // Deletes the finished runs older than the retainRuns-th newest one: one walk down runs_by_start to find it
  // and a range delete, instead of sorting every finished run into a NOT IN set (half the cost per pass).
  `DELETE FROM runs WHERE status != 'running' AND (started_at, rowid) < (
     SELECT started_at, rowid FROM runs WHERE status != 'running'
     ORDER BY started_at DESC, rowid DESC LIMIT 1 OFFSET ?)`,
  // InsertEndedRun's columns, in its order, over a run id seen before (an edge retry): the same parameter list
  // serves both, so a commit posts it once.
  `INSERT INTO runs (id, adapter, target, session_id, provider_id, background, started_at, status,
     ended_at, detail, error_code, error_message, usage_json, events_json)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (id) DO UPDATE SET adapter = excluded.adapter, target = excluded.target,
     session_id = excluded.session_id, provider_id = excluded.provider_id, background = excluded.background,
     started_at = excluded.started_at, status = excluded.status, ended_at = excluded.ended_at,
     detail = excluded.detail, error_code = excluded.error_code, error_message = excluded.error_message,
     usage_json = excluded.usage_json, events_json = excluded.events_json`,
];

/** The part of a prepared statement executeOps uses (both engines' statements have it). */
export interface RunnableStatement {
  run(...parameters: unknown[]): { changes: number | bigint };
}

/**
 * Runs `ops` in order on `statements` (prepared from HISTORY_STATEMENT_SQL, in that order). The caller wraps it
 * in a transaction. Self-contained on purpose: the writer thread is given this function's source text, so it
 * must not refer to anything outside its parameters.
 */
export function executeOps(statements: readonly RunnableStatement[], ops: readonly WriteOp[]): void {
  for (const op of ops) {
    const result = statements[op[0]].run(...op[1]);
    const otherwise = op[2];
    if (otherwise !== undefined && Number(result.changes) === 0) executeOps(statements, otherwise);
  }
}
