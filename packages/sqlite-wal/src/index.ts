// Public API of @iop/sqlite-wal: WAL checkpoints of a hot SQLite connection run in a worker thread (the edge's
// usage store and the node's run history).
export {
  DEFAULT_AUTOCHECKPOINT_PAGES,
  startWalCheckpointer,
  type CheckpointResult,
  type CheckpointerFailure,
  type SqliteEngine,
  type WalCheckpointer,
  type WalCheckpointerOptions,
} from './wal-checkpointer.js';
