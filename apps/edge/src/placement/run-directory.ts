// Long-lived runs (background responses, A2A tasks) as the fabric sees them: the key that names one run on every
// edge, the JSON view an edge answers a lookup with, and the interface the service's run registry
// (service/run-registry.ts) asks when a run is not held on this edge. The cluster implements RemoteRuns over its
// peer calls and serves the other edges' lookups from this edge's registry (cluster/cluster-runs.ts); the
// principal travels inside the key and is checked by the holder, which answers another principal's run exactly
// like an unknown one.

/** The kinds of long-lived run the registry holds (not the wire's RunKind: chat, completion, embedding). */
export const REGISTERED_RUN_KINDS = ['openai.response', 'a2a.task'] as const;
export type RegisteredRunKind = (typeof REGISTERED_RUN_KINDS)[number];

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
}
