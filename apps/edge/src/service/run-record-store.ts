// The durable record of long-running work (background responses, A2A tasks) under the service's run registry
// (run-registry.ts): one record per (kind, principal, id) holding the JSON state the surface last published,
// whether and when the run ended, and which edge process (edge id + boot id) wrote it. The registry writes through
// on add, on a state change and on end, before the surface answers its client, and removes a record when it
// forgets the run (TTL, count bound, delete); at start it loads the records an earlier process left. A record may
// carry its surface's resume payload (what places a not-yet-dispatched run again after a restart), written only
// while the run is resumable and as null otherwise; the store keeps it opaque. The edge's
// implementation is SQLite in `<edge.data_dir>` (sqlite-run-record-store.ts); without a store the registry keeps
// today's in-memory behaviour.
import type { RunKey, StoredRun } from '../placement/run-directory.js';

export type { StoredRun } from '../placement/run-directory.js';

/** Where the registry keeps its runs across restarts. Synchronous: a write is done before the client is answered. */
export interface RunRecordStore {
  /** Inserts or replaces the record of `record.key`. */
  save(record: StoredRun): void;
  /** Forgets a record (no-op when absent). */
  remove(key: RunKey): void;
  /** Every record, oldest (by creation) first. */
  load(): StoredRun[];
}
