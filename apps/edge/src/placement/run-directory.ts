// Long-lived runs (background responses, A2A tasks) as the fabric sees them: the key that names one run on every
// edge, the JSON view an edge answers a lookup with, and the interface the service's run registry
// (service/run-registry.ts) asks when a run is not held on this edge. The cluster implements RemoteRuns over its
// peer calls and serves the other edges' lookups from this edge's registry (cluster/cluster-runs.ts); the
// principal travels inside the key and is checked by the holder, which answers another principal's run exactly
// like an unknown one.
//
// Cluster mode also copies every durable run record into the fabric (RunRecordMirror, written by the service's
// record store, implemented by the cluster over a sealed JetStream KV bucket), so another edge can answer for a
// run whose edge is gone.

/** The kinds of long-lived run the registry holds (not the wire's RunKind: chat, completion, embedding). */
export const REGISTERED_RUN_KINDS = ['openai.response', 'a2a.task'] as const;
export type RegisteredRunKind = (typeof REGISTERED_RUN_KINDS)[number];

/** How many runs of one kind an edge holds, and how long an ended one stays retrievable. */
export interface RunBounds {
  maxEntries: number;
  /** How long an ended run stays retrievable. */
  ttlMs: number;
}

export const DEFAULT_RUN_BOUNDS: RunBounds = { maxEntries: 1000, ttlMs: 60 * 60 * 1000 };

/** One run: whose it is ('' = anonymous), what kind, and the id the surface gave it. */
export interface RunKey {
  principal: string;
  kind: RegisteredRunKind;
  id: string;
}

/**
 * The one string a key is held under: a JSON array of its three parts, so no choice of principal or id can make
 * two different keys meet (principal `team` with id `a-x` and principal `team-a` with id `x` stay apart).
 */
export function encodeRunKey(key: RunKey): string {
  return JSON.stringify([key.principal, key.kind, key.id]);
}

/** True for a well-formed key (a lookup from another edge is checked before it reaches a registry). */
export function isRunKey(value: unknown): value is RunKey {
  if (typeof value !== 'object' || value === null) return false;
  const key = value as Record<string, unknown>;
  return (
    typeof key['principal'] === 'string' &&
    typeof key['id'] === 'string' &&
    key['id'] !== '' &&
    (REGISTERED_RUN_KINDS as readonly unknown[]).includes(key['kind'])
  );
}

/** A run as a lookup answers it: the surface's JSON state (response object, task) and whether the run ended. */
export interface RunView {
  state: unknown;
  ended: boolean;
}

/** A cancel's answer: the view after the cancel, and whether the run had already ended before it. */
export interface RunCancelResult {
  view: RunView;
  alreadyEnded: boolean;
}

/** What a subscription yields: the run's state first, then the events the owner emits, until the run ends. */
export type RunUpdate = { state: unknown } | { event: unknown };

/** One stored run: the durable record the registry writes through (service/run-record-store.ts). */
export interface StoredRun {
  key: RunKey;
  /** The surface's JSON state (a Response object, an A2A task). */
  state: unknown;
  createdAt: number;
  updatedAt: number;
  /** When the run ended; undefined while it is going. */
  endedAt: number | undefined;
  /** The edge (`edge.id`) and the process (a boot id per start) that wrote the record last. */
  edgeId: string;
  boot: string;
  /**
   * What the run's surface needs to place it again after an edge restart (the surface's own versioned format),
   * kept only while the run has not been dispatched (its kind's `resumable` state); undefined otherwise. Never
   * answered by a lookup and never copied into the fabric (cluster/run-record-mirror.ts).
   */
  resume?: unknown;
}

/**
 * Where the records of long-lived runs are copied for the other edges (cluster mode). Never blocks and never
 * throws: the copy is written later, and a copy that could not be written is counted, not reported back.
 */
export interface RunRecordMirror {
  saved(record: StoredRun): void;
  removed(key: RunKey): void;
}

/** What a kind's `interrupted` hook knows of why a run it held going is over. */
export interface RunRestart {
  /** The edge that held the run (`edge.id` of the earlier process). */
  edgeId: string;
  /** When the run was found over (epoch ms). */
  atMs: number;
  /**
   * Cluster failover: the edge that answered for the run after its edge `edgeId` left the cluster (undefined: the
   * edge itself restarted).
   */
  answeredBy?: string;
}

/** The other edges' registries (cluster mode). Undefined answers mean no edge holds that key. */
export interface RemoteRuns {
  get(key: RunKey): Promise<RunView | undefined>;
  cancel(key: RunKey, reason: string): Promise<RunCancelResult | undefined>;
  subscribe(key: RunKey, signal: AbortSignal): Promise<AsyncIterable<RunUpdate> | undefined>;
  delete(key: RunKey): Promise<boolean>;
}

/** This edge's registry as the cluster serves it to the other edges (local entries only, never the fabric). */
export interface LocalRuns {
  getLocal(key: RunKey): RunView | undefined;
  cancelLocal(key: RunKey, reason: string): Promise<RunCancelResult | undefined>;
  subscribeLocal(key: RunKey, signal: AbortSignal): AsyncIterable<RunUpdate> | undefined;
  deleteLocal(key: RunKey): boolean;
  /** The terminal state of a run another edge left going (its kind's `interrupted` hook, naming the failover). */
  abandonedEnding(kind: RegisteredRunKind, state: unknown, restart: RunRestart): unknown;
  /**
   * Another edge ended this run while this edge was out of the fabric (a failover answer, final cluster-wide):
   * this edge takes that ending, cancelling the run if it is still going here. No-op when the key is not held.
   */
  adoptEnding(key: RunKey, state: unknown): void;
}
