// The run registry's record store in cluster mode: the edge's own store (SQLite in `<data_dir>`) stays the
// write-through source of truth — a save that fails there fails the registry's write as before — and every write
// that succeeded is then handed to the fabric's mirror (cluster/run-record-mirror.ts), which copies it into the
// sealed JetStream KV bucket later, off the client's path. Loading reads the local store only: the mirror is read
// by the other edges, when this one is gone. A record's resume payload (a queued run's request) stays local: the
// copy in the fabric never carries it, so cluster failover ends a dead edge's queued runs (`edge_lost`) rather than
// placing them again.
import type { RunKey, RunRecordMirror, StoredRun } from '../placement/run-directory.js';
import type { RunRecordStore } from './run-record-store.js';

/** `local` written through, each successful write copied to `mirror` (which never blocks or throws). */
export function mirroredRunRecords(local: RunRecordStore, mirror: RunRecordMirror): RunRecordStore {
  return {
    save(record: StoredRun): void {
      local.save(record);
      if (record.resume === undefined) {
        mirror.saved(record);
        return;
      }
      const shared: StoredRun = { ...record };
      delete shared.resume;
      mirror.saved(shared);
    },
    remove(key: RunKey): void {
      local.remove(key);
      mirror.removed(key);
    },
    load: () => local.load(),
  };
}
