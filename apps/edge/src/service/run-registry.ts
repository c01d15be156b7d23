// The service-level registry of long-lived runs: background responses (OpenAI) and A2A tasks. The surfaces start
// the run and translate its state; the registry holds what a later lookup needs — the state the surface last
// published (a response object, a task), whether the run ended, and the cancel handle — and serves get / cancel /
// subscribe / delete, on this edge and (cluster mode) through the fabric: a key this edge does not hold is asked
// of the other edges (placement/run-directory.ts RemoteRuns, implemented by the cluster), which check the
// principal where the run is held.
//
// Keys are (principal, kind, id) under one unambiguous encoding (encodeRunKey). A principal never sees another
// principal's run: a lookup with the wrong principal is the same miss as an unknown id. Anonymous runs (no keys
// configured) have principal ''.
//
// Bounds, per kind: at most `maxEntries` runs (adding one evicts the oldest ended run first; when every run is
// still going the add is refused with `registry_full`), and an ended run is forgotten `ttlMs` after it ended.
// Subscriptions are bounded too: at most `maxSubscribers` per run, each buffering at most `maxQueued` updates its
// reader has not taken (a slower reader gets `subscriber_too_slow` and may subscribe again). close() cancels
// every run still going (edge shutdown).
//
// Durability (optional `store`, run-record-store.ts): the registry writes a run's record through on add, on each
// update whose kind's `revision` changed (a status change, never a streamed token) and on end, before the surface
// answers its client, and removes it when it forgets the run. restore() loads what an earlier process left: ended
// runs are served as before; a run the earlier process left going becomes terminal through its kind's
// `interrupted` hook (registered by the surface with durability(), so the surface's vocabulary names the edge
// restart) — unless it had not been dispatched yet: a run added with a resume payload keeps that payload in its
// record while its kind's `resumable(state)` holds (it is written as null by the first update that leaves such a
// state, and by the end), and a restored run that still has one is handed to the kind's `resume` hook, which takes
// the existing entry over (RestoredRun.take) and places the run again through its surface's normal path. The
// payload is the surface's own (opaque here) and is never answered by a lookup. Without a store nothing is
// written and nothing survives a restart.
//
// Cluster failover (cluster/run-failover.ts): another edge that answers for a run whose edge left the cluster ends
// a run that edge left going through this registry's hook for the kind (abandonedEnding); when that edge comes
// back, its copy of the run takes the failover's ending (adoptEnding) — the first ending in the fabric wins.
import type { Clock } from '../clock.js';
import { RunRegistryError } from '../run-registry-error.js';
import {
  DEFAULT_RUN_BOUNDS,
  encodeRunKey,
  type LocalRuns,
  type RemoteRuns,
  type RunBounds,
  type RunCancelResult,
  type RunKey,
  type RegisteredRunKind,
  type RunRestart,
  type RunUpdate,
  type RunView,
} from '../placement/run-directory.js';

export type {
  RunBounds,
  RunRestart,
  RunKey,
  RegisteredRunKind,
  RunUpdate,
  RunView,
  RunCancelResult,
} from '../placement/run-directory.js';
import type { RunRecordStore } from './run-record-store.js';

/** Subscriptions one run accepts at once (A2A `message/stream` + `tasks/resubscribe` calls of one task). */
export const DEFAULT_MAX_SUBSCRIBERS = 16;
const DEFAULT_MAX_QUEUED = 1024;

/** How the owner of a run stops it: called once, by the first cancel (or close) while the run is going. */
export type RunCanceller = (reason: string) => Promise<void> | void;

/** The owner's handle on a registered run: it publishes state and events, and says when the run ended. */
export interface RegisteredRun {
  readonly key: RunKey;
  readonly ended: boolean;
  /** The current state (a JSON value: a lookup on another edge gets a copy of it). */
  readonly state: unknown;
  /** Replaces the state lookups answer with. */
  update(state: unknown): void;
  /** Passes one event to the run's subscribers. */
  emit(event: unknown): void;
  /** The run ended with `state`; later updates are ignored and subscriptions end. */
  end(state: unknown): void;
}

/** How a kind's runs are kept across restarts (registered by the surface that owns the kind). */
export interface RunKindDurability {
  /**
   * A short fingerprint of a state (e.g. its status): an update is written to the store only when it differs from
   * the last written one, so a run that publishes every streamed token is written once per state change.
   */
  revision(state: unknown): string;
  /**
   * The terminal state of a run an earlier edge process left going, naming the edge restart (or, with
   * `restart.answeredBy`, the cluster failover).
   */
  interrupted(state: unknown, restart: RunRestart): unknown;
  /**
   * True while a run in `state` has not been dispatched (e.g. `queued`): only then is its resume payload kept in
   * the record. Absent: a payload is dropped by the run's first update.
   */
  resumable?(state: unknown): boolean;
  /**
   * A run an earlier process left resumable, with its payload: the surface takes the entry over
   * (`restored.take(cancel)`, synchronously) and places the run again, or ends it naming why it cannot. A run it
   * does not take is ended by `interrupted`. Absent: every restored run left going is interrupted.
   */
  resume?(restored: RestoredRun): void;
}

/** A run an earlier process left queued with a resume payload, offered to its kind's `resume` hook. */
export interface RestoredRun {
  readonly key: RunKey;
  /** The state it was last recorded with (still resumable). */
  readonly state: unknown;
  /** The surface's resume payload, as it was stored (the surface checks its format). */
  readonly payload: unknown;
  /** The earlier process (edge id) and when this one found the run. */
  readonly restart: RunRestart;
  /** Takes the entry over as a run that is going again: the handle publishes its state, `cancel` stops it. */
  take(cancel: RunCanceller): RegisteredRun;
}

export interface RunRegistryOptions {
  clock: Clock;
  /** The durable record (the edge: SQLite in `edge.data_dir`); none = in memory only. */
  store?: RunRecordStore;
  /** Stored with every record: this edge's id and this process's boot id. */
  origin?: { edgeId: string; boot: string };
  /** A write to the store failed after the run was added (the run goes on; its record may be stale). */
  onStoreFailure?: (error: unknown, key: RunKey) => void;
  /** Bounds per kind; a kind not named gets DEFAULT_RUN_BOUNDS. */
  bounds?: Partial<Record<RegisteredRunKind, RunBounds>>;
  /** Cluster mode: the other edges' registries, asked when this edge does not hold a key. */
  remote?: RemoteRuns;
  maxSubscribers?: number;
  maxQueued?: number;
}

interface Entry {
  key: RunKey;
  state: unknown;
  createdAt: number;
  endedAt: number | undefined;
  /** The kind's revision of the state last written to the store. */
  savedRevision: string | undefined;
  /**
   * Restored unfinished from an earlier process (the edge id it named) and its kind's `interrupted` hook has not
   * run yet; undefined otherwise.
   */
  interruptedOn: string | undefined;
  /** The surface's resume payload while the run is resumable (written with the record); undefined otherwise. */
  resume: unknown;
  cancel: RunCanceller | undefined;
  cancelling: Promise<void> | undefined;
  subscribers: Set<Subscriber>;
}

type Subscriber = (update: RunUpdate | 'end') => void;

export class RunRegistry implements LocalRuns {
  /** Per kind, in insertion order (the first ended entry of a kind is its oldest). */
  private readonly entries = new Map<RegisteredRunKind, Map<string, Entry>>();
  private readonly maxSubscribers: number;
  private readonly maxQueued: number;
  private readonly durabilities = new Map<RegisteredRunKind, RunKindDurability>();
  private closed = false;

  constructor(private readonly options: RunRegistryOptions) {
    this.maxSubscribers = options.maxSubscribers ?? DEFAULT_MAX_SUBSCRIBERS;
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  }

  /**
   * Loads the runs an earlier process left in the store (once, before the surfaces serve): runs past their TTL or
   * beyond the count bound are dropped; a run left going is ended by its kind's `interrupted` hook (now, or when
   * the kind registers its durability). Returns how many runs were restored and how many were interrupted.
   */
  restore(): { restored: number; interrupted: number } {
    const store = this.options.store;
    if (!store) return { restored: 0, interrupted: 0 };
    const now = this.options.clock.now();
    let restored = 0;
    let interrupted = 0;
    for (const record of store.load()) {
      const shelf = this.shelf(record.key.kind);
      const encoded = encodeRunKey(record.key);
      if (shelf.has(encoded)) continue;
      const going = record.endedAt === undefined;
      shelf.set(encoded, {
        key: { ...record.key },
        state: record.state,
        createdAt: record.createdAt,
        // A run left going is over: nothing here can continue it, and its hook makes its state say so.
        endedAt: record.endedAt ?? now,
        savedRevision: undefined,
        interruptedOn: going ? record.edgeId : undefined,
        resume: going ? record.resume : undefined,
        cancel: undefined,
        cancelling: undefined,
        subscribers: new Set(),
      });
      restored += 1;
      if (going) interrupted += 1;
    }
    for (const kind of this.entries.keys()) {
      this.expire(kind);
      this.trim(kind);
      this.settleInterrupted(kind);
    }
    return { restored, interrupted };
  }

  /** Registers how a kind's runs are kept across restarts; ends the kind's restored runs that were going. */
  durability(kind: RegisteredRunKind, durability: RunKindDurability): void {
    this.durabilities.set(kind, durability);
    this.settleInterrupted(kind);
  }

  /** The keys of the runs of `kind` this edge holds (restored ones included), oldest first. */
  localKeys(kind: RegisteredRunKind): RunKey[] {
    this.expire(kind);
    return [...this.shelf(kind).values()].map((entry) => ({ ...entry.key }));
  }

  /** True when lookups of keys held elsewhere go to the other edges. */
  get inFabric(): boolean {
    return this.options.remote !== undefined;
  }

  /**
   * Registers a run that is going; `resume` (the surface's payload to place it again after a restart) is kept in
   * its record while the kind's `resumable(state)` holds. Throws RunRegistryError: `registry_full` (every run of
   * the kind is going), `duplicate_run` (the key is held), `shutting_down`.
   */
  add(key: RunKey, state: unknown, cancel: RunCanceller, resume?: unknown): RegisteredRun {
    if (this.closed) throw new RunRegistryError('shutting_down', 'the edge is shutting down');
    const shelf = this.shelf(key.kind);
    const encoded = encodeRunKey(key);
    this.expire(key.kind);
    if (shelf.has(encoded))
      throw new RunRegistryError('duplicate_run', `run ${key.id} is already registered`);
    this.makeRoom(key.kind);
    const entry: Entry = {
      key: { ...key },
      state,
      createdAt: this.options.clock.now(),
      endedAt: undefined,
      savedRevision: undefined,
      interruptedOn: undefined,
      // Kept only to be written: without a store nothing survives a restart anyway.
      resume: this.options.store ? resume : undefined,
      cancel,
      cancelling: undefined,
      subscribers: new Set(),
    };
    if (this.options.store) {
      try {
        this.save(entry);
      } catch (error) {
        throw new RunRegistryError(
          'store_failed',
          `the record of run ${key.id} could not be written: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    shelf.set(encoded, entry);
    return this.handle(entry);
  }

  /** Runs held here (of one kind, or all). */
  size(kind?: RegisteredRunKind): number {
    if (kind) return this.entries.get(kind)?.size ?? 0;
    let total = 0;
    for (const shelf of this.entries.values()) total += shelf.size;
    return total;
  }

  // --- lookups: this edge first, then (cluster mode) the other edges ---

  async get(key: RunKey): Promise<RunView | undefined> {
    return this.getLocal(key) ?? (await this.options.remote?.get(key));
  }

  async cancel(key: RunKey, reason: string): Promise<RunCancelResult | undefined> {
    return (await this.cancelLocal(key, reason)) ?? (await this.options.remote?.cancel(key, reason));
  }

  async subscribe(key: RunKey, signal: AbortSignal): Promise<AsyncIterable<RunUpdate> | undefined> {
    return this.subscribeLocal(key, signal) ?? (await this.options.remote?.subscribe(key, signal));
  }

  /** Forgets a run (cancelling it first when it is going); false when no edge held it. */
  async delete(key: RunKey): Promise<boolean> {
    if (this.deleteLocal(key)) return true;
    return (await this.options.remote?.delete(key)) ?? false;
  }

  // --- this edge only (what the cluster serves to the other edges) ---

  getLocal(key: RunKey): RunView | undefined {
    const entry = this.lookup(key);
    return entry ? view(entry) : undefined;
  }

  async cancelLocal(key: RunKey, reason: string): Promise<RunCancelResult | undefined> {
    const entry = this.lookup(key);
    if (!entry) return undefined;
    const alreadyEnded = entry.endedAt !== undefined;
    if (!alreadyEnded) await this.stop(entry, reason);
    return { view: view(entry), alreadyEnded };
  }

  subscribeLocal(key: RunKey, signal: AbortSignal): AsyncIterable<RunUpdate> | undefined {
    const entry = this.lookup(key);
    if (!entry) return undefined;
    if (entry.subscribers.size >= this.maxSubscribers) {
      throw new RunRegistryError(
        'too_many_subscribers',
        `too many subscriptions to run ${key.id} (at most ${this.maxSubscribers.toString()}); close one and retry`,
      );
    }
    return this.follow(entry, signal);
  }

  deleteLocal(key: RunKey): boolean {
    const entry = this.lookup(key);
    if (!entry) return false;
    if (entry.endedAt === undefined) void this.stop(entry, 'run deleted');
    this.forget(key.kind, encodeRunKey(key), entry);
    endSubscribers(entry);
    return true;
  }

  abandonedEnding(kind: RegisteredRunKind, state: unknown, restart: RunRestart): unknown {
    const durability = this.durabilities.get(kind);
    return durability ? durability.interrupted(state, restart) : state;
  }

  adoptEnding(key: RunKey, state: unknown): void {
    const entry = this.lookup(key);
    if (!entry || (entry.endedAt !== undefined && JSON.stringify(entry.state) === JSON.stringify(state)))
      return;
    const going = entry.endedAt === undefined;
    entry.state = state;
    entry.endedAt ??= this.options.clock.now();
    entry.interruptedOn = undefined;
    entry.resume = undefined;
    if (going) void this.stop(entry, 'another edge ended this run while this edge was out of the cluster');
    this.trySave(entry);
    endSubscribers(entry);
  }

  /** Cancels every run still going and refuses new ones (edge shutdown). */
  async close(reason = 'edge shutting down'): Promise<void> {
    this.closed = true;
    const going: Promise<void>[] = [];
    for (const shelf of this.entries.values()) {
      for (const entry of shelf.values())
        if (entry.endedAt === undefined) going.push(this.stop(entry, reason));
    }
    await Promise.allSettled(going);
  }

  // --- internals ---

  private lookup(key: RunKey): Entry | undefined {
    this.expire(key.kind);
    // The principal is part of the encoded key: another principal's run is simply not there.
    return this.entries.get(key.kind)?.get(encodeRunKey(key));
  }

  private shelf(kind: RegisteredRunKind): Map<string, Entry> {
    let shelf = this.entries.get(kind);
    if (!shelf) {
      shelf = new Map();
      this.entries.set(kind, shelf);
    }
    return shelf;
  }

  private bounds(kind: RegisteredRunKind): RunBounds {
    return this.options.bounds?.[kind] ?? DEFAULT_RUN_BOUNDS;
  }

  private expire(kind: RegisteredRunKind): void {
    const shelf = this.entries.get(kind);
    if (!shelf) return;
    const cutoff = this.options.clock.now() - this.bounds(kind).ttlMs;
    for (const [encoded, entry] of shelf) {
      if (entry.endedAt !== undefined && entry.endedAt <= cutoff) this.forget(kind, encoded, entry);
    }
  }

  /** Drops the oldest ended runs beyond the count bound (restore: the store may hold more than the bound). */
  private trim(kind: RegisteredRunKind): void {
    const shelf = this.shelf(kind);
    const { maxEntries } = this.bounds(kind);
    for (const [encoded, entry] of shelf) {
      if (shelf.size <= maxEntries) return;
      if (entry.endedAt !== undefined) this.forget(kind, encoded, entry);
    }
  }

  /**
   * Settles the kind's restored runs that an earlier process left going: one still resumable with a payload is
   * offered to the kind's `resume` hook; every other one (and one the hook did not take) ends through
   * `interrupted`.
   */
  private settleInterrupted(kind: RegisteredRunKind): void {
    const durability = this.durabilities.get(kind);
    const shelf = this.entries.get(kind);
    if (!durability || !shelf) return;
    for (const entry of [...shelf.values()]) {
      if (entry.interruptedOn === undefined) continue;
      const restart: RunRestart = {
        edgeId: entry.interruptedOn,
        atMs: entry.endedAt ?? this.options.clock.now(),
      };
      if (this.offerResume(entry, durability, restart)) continue;
      entry.state = durability.interrupted(entry.state, restart);
      entry.interruptedOn = undefined;
      entry.resume = undefined;
      entry.endedAt ??= restart.atMs;
      entry.cancel = undefined;
      this.trySave(entry);
      endSubscribers(entry);
    }
  }

  /** Hands a restored resumable run to its kind's `resume` hook; true when the hook took it over. */
  private offerResume(entry: Entry, durability: RunKindDurability, restart: RunRestart): boolean {
    if (entry.resume === undefined || !durability.resume || !durability.resumable?.(entry.state))
      return false;
    let taken = false;
    const restored: RestoredRun = {
      key: { ...entry.key },
      state: structuredClone(entry.state),
      payload: entry.resume,
      restart,
      take: (cancel) => {
        if (taken) throw new Error(`run ${entry.key.id} was already taken over`);
        taken = true;
        entry.interruptedOn = undefined;
        entry.endedAt = undefined;
        entry.cancel = cancel;
        entry.cancelling = undefined;
        // Written at once: the record names this process, and still carries the payload.
        this.trySave(entry);
        return this.handle(entry);
      },
    };
    try {
      durability.resume(restored);
    } catch (error) {
      this.options.onStoreFailure?.(error, entry.key);
      if (!taken) return false;
      // Taken, then the hook failed: the run ends as interrupted (nothing else will end it).
      this.handle(entry).end(durability.interrupted(entry.state, restart));
    }
    return taken;
  }

  private forget(kind: RegisteredRunKind, encoded: string, entry: Entry): void {
    this.shelf(kind).delete(encoded);
    if (!this.options.store) return;
    try {
      this.options.store.remove(entry.key);
    } catch (error) {
      this.options.onStoreFailure?.(error, entry.key);
    }
  }

  private save(entry: Entry): void {
    const store = this.options.store;
    if (!store) return;
    const origin = this.options.origin ?? { edgeId: '', boot: '' };
    store.save({
      key: entry.key,
      state: entry.state,
      createdAt: entry.createdAt,
      updatedAt: this.options.clock.now(),
      endedAt: entry.endedAt,
      edgeId: origin.edgeId,
      boot: origin.boot,
      ...(entry.resume !== undefined ? { resume: entry.resume } : {}),
    });
    entry.savedRevision = this.durabilities.get(entry.key.kind)?.revision(entry.state);
  }

  /** A write after the add: a failure is reported, the run goes on. */
  private trySave(entry: Entry): void {
    try {
      this.save(entry);
    } catch (error) {
      this.options.onStoreFailure?.(error, entry.key);
    }
  }

  /**
   * An update is written when its kind's revision changed (no durability registered: every update), and when it
   * leaves the kind's resumable states (the resume payload is written as null then).
   */
  private saveUpdate(entry: Entry): void {
    // Without a store no payload is held (add), so there is nothing to drop either.
    if (!this.options.store) return;
    const durability = this.durabilities.get(entry.key.kind);
    let dropped = false;
    if (entry.resume !== undefined && !(durability?.resumable?.(entry.state) ?? false)) {
      entry.resume = undefined;
      dropped = true;
    }
    const revision = durability?.revision(entry.state);
    if (!dropped && revision !== undefined && revision === entry.savedRevision) return;
    this.trySave(entry);
  }

  private makeRoom(kind: RegisteredRunKind): void {
    const shelf = this.shelf(kind);
    const { maxEntries } = this.bounds(kind);
    if (shelf.size < maxEntries) return;
    for (const [encoded, entry] of shelf) {
      if (entry.endedAt !== undefined) {
        this.forget(kind, encoded, entry);
        if (shelf.size < maxEntries) return;
      }
    }
    throw new RunRegistryError(
      'registry_full',
      `${maxEntries.toString()} runs of kind ${kind} are already going on this edge`,
    );
  }

  /** Calls the owner's cancel once; every cancel waits for that one call. */
  private stop(entry: Entry, reason: string): Promise<void> {
    if (!entry.cancelling) {
      const cancel = entry.cancel;
      entry.cancel = undefined;
      entry.cancelling = (async () => {
        await cancel?.(reason);
      })();
    }
    return entry.cancelling;
  }

  private handle(entry: Entry): RegisteredRun {
    const clock = this.options.clock;
    const saveUpdate = (): void => this.saveUpdate(entry);
    const saveEnd = (): void => this.trySave(entry);
    return {
      key: entry.key,
      get ended() {
        return entry.endedAt !== undefined;
      },
      get state() {
        return entry.state;
      },
      update(state) {
        if (entry.endedAt !== undefined) return;
        entry.state = state;
        saveUpdate();
      },
      emit(event) {
        if (entry.endedAt !== undefined) return;
        for (const subscriber of entry.subscribers) subscriber({ event });
      },
      end(state) {
        if (entry.endedAt !== undefined) return;
        entry.state = state;
        entry.endedAt = clock.now();
        entry.cancel = undefined;
        entry.resume = undefined;
        saveEnd();
        endSubscribers(entry);
      },
    };
  }

  private async *follow(entry: Entry, signal: AbortSignal): AsyncGenerator<RunUpdate> {
    const queue: (RunUpdate | 'end')[] = [];
    let overflowed = false;
    let wake: (() => void) | undefined;
    const subscriber: Subscriber = (update) => {
      if (overflowed) return;
      if (update !== 'end' && queue.length >= this.maxQueued) overflowed = true;
      else queue.push(update);
      wake?.();
    };
    const onAbort = (): void => wake?.();
    // Subscribed before the first yield: nothing the owner emits after the snapshot is missed.
    const ended = entry.endedAt !== undefined;
    if (!ended) entry.subscribers.add(subscriber);
    signal.addEventListener('abort', onAbort);
    try {
      yield { state: structuredClone(entry.state) };
      if (ended) return;
      for (;;) {
        if (signal.aborted) return;
        const next = queue.shift();
        if (next === 'end') return;
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (overflowed) {
          throw new RunRegistryError(
            'subscriber_too_slow',
            `the reader fell more than ${this.maxQueued.toString()} updates behind; subscribe again to continue`,
          );
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      entry.subscribers.delete(subscriber);
    }
  }
}

function view(entry: Entry): RunView {
  return { state: structuredClone(entry.state), ended: entry.endedAt !== undefined };
}

function endSubscribers(entry: Entry): void {
  for (const subscriber of entry.subscribers) subscriber('end');
  entry.subscribers.clear();
}
