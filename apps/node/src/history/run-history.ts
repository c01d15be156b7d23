// The node's local run history: what ran, how it ended and the events it produced. An interface so another
// backend (node:sqlite in single-file builds, an in-memory store in tests) can replace the SQLite one.
//
// Lifecycle: `recordStart` when a run is accepted, `appendEvent` for every part it streams (writes may be
// batched), `finish` exactly once with the outcome, `close` on shutdown (flushes pending events).
import type { Usage } from '@iop/wire';

/**
 * A recorded run's status. The finished ones are the run-outcome vocabulary of the whole product (the edge's run
 * events, dashboard and usage say the same): `completed`, `error`, `cancelled`. Histories written before schema 3
 * said `failed` for `error`; they are migrated on open (see sqlite-run-history.ts).
 */
export type RunStatus = 'running' | 'completed' | 'error' | 'cancelled' | 'interrupted';

/** Statuses a run can end with through `finish` (`interrupted` is only set by crash recovery). */
export type FinishedRunStatus = 'completed' | 'error' | 'cancelled';

export interface RunStartRecord {
  runId: string;
  adapter: string;
  target: string;
  sessionId: string;
  providerId: string;
  background: boolean;
  startedAt: number;
}

export interface RunEndRecord {
  status: FinishedRunStatus;
  endedAt: number;
  /** complete detail (`stop`, `idle-timeout`, ...) or the cancel reason. */
  detail: string;
  errorCode?: string;
  errorMessage?: string;
  usage?: Usage;
}

export interface RunEventRecord {
  runId: string;
  seq: number;
  /** RunEventPart type (`start`, `text-delta`, ...). */
  type: string;
  payload: unknown;
  at: number;
}

export interface RunSummary {
  runId: string;
  adapter: string;
  target: string;
  sessionId: string;
  providerId: string;
  background: boolean;
  status: RunStatus;
  startedAt: number;
  endedAt: number | null;
  detail: string;
  errorCode: string | null;
  errorMessage: string | null;
  usage: Usage | null;
  eventCount: number;
}

export interface RunHistory {
  recordStart(run: RunStartRecord): void;
  appendEvent(event: RunEventRecord): void;
  finish(runId: string, outcome: RunEndRecord): void;
  /** Newest first. */
  list(options?: { limit?: number }): RunSummary[];
  events(runId: string): RunEventRecord[];
  /** Writes buffered events now. */
  flush(): void;
  /** Commits what is queued and closes; resolves once no thread uses the file any more. Idempotent. */
  close(): Promise<void>;
}
