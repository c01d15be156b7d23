// Test support: a RunRecordStore in memory that counts its writes (the hot path's tests assert it is not touched).
import { encodeRunKey, type RunKey } from '../../placement/run-directory.js';
import type { RunRecordStore, StoredRun } from '../run-record-store.js';

export class MemoryRunRecordStore implements RunRecordStore {
  private readonly records = new Map<string, StoredRun>();
  /** save() and remove() calls so far. */
  writes = 0;

  save(record: StoredRun): void {
    this.writes += 1;
    this.records.delete(encodeRunKey(record.key));
    this.records.set(encodeRunKey(record.key), structuredClone(record));
  }

  remove(key: RunKey): void {
    this.writes += 1;
    this.records.delete(encodeRunKey(key));
  }

  load(): StoredRun[] {
    return [...this.records.values()]
      .map((record) => structuredClone(record))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** The stored record of `key` (tests). */
  find(key: RunKey): StoredRun | undefined {
    const record = this.records.get(encodeRunKey(key));
    return record ? structuredClone(record) : undefined;
  }
}
