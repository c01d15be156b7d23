// The fabric's copy of the durable run records (background responses, A2A tasks): KV `iop_runs`, sealed with the
// fabric key like every bucket (fabric-bus.ts SealedKv), one entry per run under `run.<sha256 of the run key>`.
// The entry holds the whole record — the run key with its principal, the state, the times, the edge that wrote
// it — so a reader checks that the entry is exactly the key it asked for (another principal's run is never
// served), and the sealing binds each value to its bucket and key (a value moved to another key does not open).
//
// Writes never block a client: the registry writes its own store (SQLite) first, then hands the record here;
// the record waits in a bounded queue (one slot per run, the newest write replacing an older one still waiting)
// and one writer copies the queue to NATS in order. A write that cannot be queued (queue full, mirror closed) or
// that NATS refuses is counted (`iop_run_record_mirror_writes_total{result}`) and logged, and the local record
// stays the source of truth: a later write of the same run carries its whole state again.
//
// Who wins: every write is a compare-and-set over the revision the writer read. An entry ended by a failover
// answer (another edge answered for this run after its edge left the cluster, run-failover.ts) is final: the
// edge that held the run, coming back, does not overwrite it (`superseded`) and takes that ending instead
// (`adopt`), so a run a client was told had failed never comes back as going or completed.
//
// Bounds: the bucket keeps an entry at most RUN_MIRROR_TTL_MS after its last write (NATS max age; also the age
// a sealed value may have), and at most RUN_MIRROR_MAX_BYTES in all. Each edge removes what its registry forgets
// (ended TTL, count bound, delete) with a sealed tombstone; a gone edge's entries age out with the bucket's TTL,
// and a failover reader applies the registry's own rule (an ended run is gone `ttlMs` after it ended).
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import { isRunKey, type RunKey, type RunRecordMirror, type StoredRun } from '../placement/run-directory.js';
import type { SealedKv } from './fabric-bus.js';

export const RUNS_BUCKET = 'iop_runs';
/** How long the bucket keeps an entry after its last write (a run going longer without a state change ages out). */
export const RUN_MIRROR_TTL_MS = 24 * 60 * 60 * 1000;
/** The bucket's size bound (NATS refuses writes beyond it; they are counted as failed). */
export const RUN_MIRROR_MAX_BYTES = 256 * 1024 * 1024;
/** Runs whose writes may wait at once. */
export const DEFAULT_MIRROR_QUEUE = 1024;
/** Compare-and-set attempts per write (another edge wrote the same entry in between). */
const MAX_WRITE_ATTEMPTS = 3;

/** The `result` label of iop_run_record_mirror_writes_total. */
export type MirrorWriteResult =
  /** Copied to the bucket. */
  | 'ok'
  /** NATS refused it or did not answer (the local record is kept; a later write copies the whole state). */
  | 'failed'
  /** Not queued: the queue was full or the mirror closed. */
  | 'dropped'
  /** Not written: a failover answer had ended the run first (this edge took that ending). */
  | 'superseded';

export const MIRROR_WRITE_RESULTS: readonly MirrorWriteResult[] = ['ok', 'failed', 'dropped', 'superseded'];

/** A record as the bucket holds it. */
export interface MirroredRun extends StoredRun {
  /** The edge that ended the run by a failover answer (final: nothing overwrites it). */
  failoverBy?: string;
}

/** An entry read back: the record and the bucket revision it was read at. */
export interface MirrorEntry {
  record: MirroredRun;
  revision: number;
}

/** The bucket key of a run: its encoded key hashed (any principal or id becomes a valid, fixed-size KV token). */
export function runMirrorKey(key: RunKey): string {
  return `run.${createHash('sha256')
    .update(JSON.stringify([key.principal, key.kind, key.id]))
    .digest('hex')}`;
}

export interface FabricRunRecordsOptions {
  kv: SealedKv;
  /** This edge (a failover ending names it). */
  edgeId: string;
  clock: Clock;
  logger: Logger;
  /** Each write's result (the metric). */
  onWrite?(result: MirrorWriteResult): void;
  maxQueued?: number;
}

interface Pending {
  key: RunKey;
  /** undefined: remove the entry. */
  record: StoredRun | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The run records' copy in the fabric: written from the registry's writes, read by failover answers. */
export class FabricRunRecords implements RunRecordMirror {
  private readonly queue = new Map<string, Pending>();
  private readonly maxQueued: number;
  private draining: Promise<void> | undefined;
  private closed = false;
  private adopt: ((key: RunKey, state: unknown) => void) | undefined;

  constructor(private readonly options: FabricRunRecordsOptions) {
    this.maxQueued = options.maxQueued ?? DEFAULT_MIRROR_QUEUE;
  }

  /** Where a superseded write's run takes the failover's ending (this edge's registry). */
  adoptInto(adopt: (key: RunKey, state: unknown) => void): void {
    this.adopt = adopt;
  }

  saved(record: StoredRun): void {
    this.enqueue({ key: record.key, record });
  }

  removed(key: RunKey): void {
    this.enqueue({ key, record: undefined });
  }

  /** Writes waiting. */
  get queued(): number {
    return this.queue.size;
  }

  /** Resolves when every queued write has been tried. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** The entry of `key`: undefined when there is none, it did not open, or it names another key. */
  async read(key: RunKey): Promise<MirrorEntry | undefined> {
    const entry = await this.options.kv.get(runMirrorKey(key));
    if (!entry?.value) return undefined;
    const record = parseRecord(entry.value);
    if (!record || !sameKey(record.key, key)) return undefined;
    return { record, revision: entry.revision };
  }

  /**
   * Writes a failover ending over the entry read at `entry.revision`: false when the entry changed since (its
   * edge, or another failover, wrote first).
   */
  async endByFailover(entry: MirrorEntry, state: unknown): Promise<boolean> {
    const now = this.options.clock.now();
    const record: MirroredRun = {
      ...entry.record,
      state,
      updatedAt: now,
      endedAt: now,
      failoverBy: this.options.edgeId,
    };
    try {
      await this.options.kv.update(runMirrorKey(record.key), encodeRecord(record), entry.revision);
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  /** Removes the entry read at `entry.revision` (a delete answered for a gone edge); false when it changed. */
  async removeRead(entry: MirrorEntry): Promise<boolean> {
    try {
      await this.options.kv.delete(runMirrorKey(entry.record.key), { previousSeq: entry.revision });
      return true;
    } catch (error) {
      if (isWrongRevision(error)) return false;
      throw error;
    }
  }

  /**
   * Stops taking writes and waits for the queued ones, at most `withinMs`; what is still queued then is dropped
   * (the local records keep it).
   */
  async close(withinMs: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.draining) {
      let timer: ReturnType<Clock['setTimeout']> | undefined;
      await Promise.race([
        this.idle(),
        new Promise<void>((resolve) => {
          timer = this.options.clock.setTimeout(resolve, withinMs);
        }),
      ]);
      this.options.clock.clearTimeout(timer);
    }
    for (let left = this.queue.size; left > 0; left -= 1) this.options.onWrite?.('dropped');
    this.queue.clear();
  }

  private enqueue(pending: Pending): void {
    const kvKey = runMirrorKey(pending.key);
    if (this.closed) {
      // Leaving the cluster: the runs ended on the way out are in the local records.
      this.options.onWrite?.('dropped');
      return;
    }
    if (!this.queue.has(kvKey) && this.queue.size >= this.maxQueued) {
      this.options.onWrite?.('dropped');
      this.options.logger.warn(
        { kind: pending.key.kind, id: pending.key.id, queued: this.queue.size },
        'run record mirror: write dropped (queue full); the local record is kept',
      );
      return;
    }
    // The newest write of a run replaces one still waiting: the entry only ever needs the latest whole record.
    this.queue.set(kvKey, pending);
    this.draining ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        const next = this.queue.entries().next();
        if (next.done) return;
        const [kvKey, pending] = next.value;
        this.queue.delete(kvKey);
        let result: MirrorWriteResult;
        try {
          result = await this.write(kvKey, pending);
        } catch (error) {
          result = 'failed';
          this.options.logger.warn(
            {
              kind: pending.key.kind,
              id: pending.key.id,
              error: error instanceof Error ? error.message : String(error),
            },
            'run record mirror: write failed; the local record is kept',
          );
        }
        this.options.onWrite?.(result);
      }
    } finally {
      this.draining = undefined;
    }
  }

  private async write(kvKey: string, pending: Pending): Promise<MirrorWriteResult> {
    const kv = this.options.kv;
    for (let attempt = 1; ; attempt += 1) {
      const current = await kv.get(kvKey);
      const mirrored = current?.value ? parseRecord(current.value) : undefined;
      if (mirrored?.failoverBy !== undefined && pending.record !== undefined) {
        // A failover answer ended this run first: final. This edge's copy takes that ending.
        if (JSON.stringify(mirrored.state) !== JSON.stringify(pending.record.state))
          this.adopt?.(pending.key, mirrored.state);
        return 'superseded';
      }
      try {
        if (pending.record === undefined) {
          if (current?.value !== undefined) await kv.delete(kvKey, { previousSeq: current.revision });
        } else if (current) {
          await kv.update(kvKey, encodeRecord(pending.record), current.revision);
        } else {
          await kv.create(kvKey, encodeRecord(pending.record));
        }
        return 'ok';
      } catch (error) {
        if (!isWrongRevision(error) || attempt >= MAX_WRITE_ATTEMPTS) throw error;
      }
    }
  }
}

function encodeRecord(record: MirroredRun): Uint8Array {
  return encoder.encode(JSON.stringify(record));
}

/** A well-formed record, or undefined (a value that opened but does not parse is ignored like one that did not). */
function parseRecord(data: Uint8Array): MirroredRun | undefined {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data)) as unknown;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const number = (name: string) => typeof record[name] === 'number';
  if (
    !isRunKey(record['key']) ||
    !('state' in record) ||
    !number('createdAt') ||
    !number('updatedAt') ||
    (record['endedAt'] !== undefined && !number('endedAt')) ||
    typeof record['edgeId'] !== 'string' ||
    typeof record['boot'] !== 'string' ||
    (record['failoverBy'] !== undefined && typeof record['failoverBy'] !== 'string')
  )
    return undefined;
  return value as MirroredRun;
}

function sameKey(a: RunKey, b: RunKey): boolean {
  return a.principal === b.principal && a.kind === b.kind && a.id === b.id;
}

/** NATS refused a compare-and-set: the entry's revision moved (JetStream API error 10071). */
function isWrongRevision(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown; api_error?: { err_code?: unknown } }).code;
  const message = error instanceof Error ? error.message : '';
  return code === 10071 || code === 10164 || /wrong last sequence/i.test(message);
}
