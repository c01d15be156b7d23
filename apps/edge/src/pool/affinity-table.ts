// Conversation affinity: which provider served an affinity key last, so the next turn of that conversation can go
// back to the server that holds its prompt prefix in its KV cache. Keys are opaque, already scoped by principal
// and hashed by placement (placement/affinity-key.ts), so an entry costs a fixed few dozen bytes whatever the
// client sent.
//
// Bounded both ways: at most `maxEntries` entries (the least recently used one goes first) and an entry not used
// for `ttlMs` is forgotten. A Map keeps insertion order, and every use re-inserts its entry, so the Map's first
// entry is always the least recently used one: eviction and expiry only ever look at the front. The table holds
// no timers; it reads the clock when used.
import type { Clock } from '../clock.js';

export interface AffinityTableOptions {
  maxEntries: number;
  ttlMs: number;
  clock: Pick<Clock, 'now'>;
}

interface AffinityEntry {
  providerId: string;
  /** clock.now() of the last use. */
  usedAt: number;
}

export class AffinityTable {
  private readonly entries = new Map<string, AffinityEntry>();
  private maxEntries: number;
  private ttlMs: number;

  constructor(private readonly options: AffinityTableOptions) {
    this.maxEntries = Math.max(1, options.maxEntries);
    this.ttlMs = options.ttlMs;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The provider that served `key` last, unless the entry expired (then it is dropped). */
  get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.options.clock.now() - entry.usedAt >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.providerId;
  }

  /** Records that `providerId` serves `key` now (the entry becomes the most recently used). */
  set(key: string, providerId: string): void {
    const now = this.options.clock.now();
    this.entries.delete(key);
    this.entries.set(key, { providerId, usedAt: now });
    this.evict(now);
  }

  /** New bounds from a config refresh; a smaller table drops its least recently used entries at once. */
  resize(maxEntries: number, ttlMs: number): void {
    this.maxEntries = Math.max(1, maxEntries);
    this.ttlMs = ttlMs;
    this.evict(this.options.clock.now());
  }

  /** Forgets every entry that names `providerId` except those listed as still valid (a provider left the config). */
  forgetProviders(keep: (providerId: string) => boolean): void {
    for (const [key, entry] of this.entries) {
      if (!keep(entry.providerId)) this.entries.delete(key);
    }
  }

  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      const expired = now - entry.usedAt >= this.ttlMs;
      if (!expired && this.entries.size <= this.maxEntries) return;
      this.entries.delete(key);
    }
  }
}
