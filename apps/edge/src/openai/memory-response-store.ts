// The response store when the edge has no database for it (an embedded OpenAI app, unit tests): in memory, with
// the same TTL and per-key cap as the SQLite store and a total cap across keys, so it never grows without bound.
// Nothing survives the process. `writes` counts save() and remove() calls (the hot path's tests assert it).
import type { Clock } from '../clock.js';
import type { ResponseStore, ResponseStoreBounds, StoredResponse } from './response-store.js';

export interface MemoryResponseStoreOptions extends ResponseStoreBounds {
  clock: Clock;
  /** Records kept across all keys, the oldest evicted first; default 10 000. */
  maxTotal?: number;
}

export class MemoryResponseStore implements ResponseStore {
  /** In save order: the first entry is the oldest (what the caps evict first). */
  private readonly records = new Map<string, StoredResponse>();
  /** save() and remove() calls so far. */
  writes = 0;

  constructor(private readonly options: MemoryResponseStoreOptions) {}

  save(record: StoredResponse): void {
    this.writes += 1;
    const key = keyOf(record.owner, record.id);
    this.records.delete(key);
    this.records.set(key, structuredClone(record));
    this.expire();
    this.trim(record.owner);
  }

  get(owner: string, id: string): StoredResponse | undefined {
    const record = this.records.get(keyOf(owner, id));
    if (!record || this.expired(record)) return undefined;
    return structuredClone(record);
  }

  remove(owner: string, id: string): boolean {
    this.writes += 1;
    return this.records.delete(keyOf(owner, id));
  }

  /** Records held, expired ones not yet dropped included. */
  get size(): number {
    return this.records.size;
  }

  close(): Promise<void> {
    this.records.clear();
    return Promise.resolve();
  }

  private expired(record: StoredResponse): boolean {
    return record.createdAt + this.options.ttlMs <= this.options.clock.now();
  }

  private expire(): void {
    // A response that ran long is saved after later ones: every record is checked, not only the first ones.
    for (const [key, record] of this.records) if (this.expired(record)) this.records.delete(key);
  }

  private trim(owner: string): void {
    const maxTotal = this.options.maxTotal ?? 10_000;
    let owned = 0;
    for (const record of this.records.values()) if (record.owner === owner) owned += 1;
    for (const [key, record] of this.records) {
      if (owned <= this.options.maxPerKey && this.records.size <= maxTotal) return;
      if (record.owner === owner) owned -= 1;
      else if (this.records.size <= maxTotal) continue;
      this.records.delete(key);
    }
  }
}

function keyOf(owner: string, id: string): string {
  return `${owner}\u0000${id}`;
}
