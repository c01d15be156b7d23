// Cluster failover for long-lived runs: the other edges' registries (RemoteRuns over peer calls, cluster-runs.ts)
// first, then the fabric's copy of the run records (run-record-mirror.ts) when no live edge answered for the key.
//
// The edge that wrote a record answers for it while it is a live member of the cluster (its sealed state is
// younger than cluster.state_ttl_ms): a miss or an unanswered call then stays what it is today (none, or
// `holder_lost`), never the mirror's possibly older copy. Once that edge has left the cluster (killed, cut off),
// the mirror answers: an ended run as it ended; a run it left going ends here as `failed` through the kind's
// `interrupted` hook (naming both edges), and that ending is written back to the mirror by compare-and-set so
// every later answer — from any edge, and from the gone edge when it comes back (it takes that ending) — is the
// same. An ended record older than the registry's ended-run TTL is gone, as on its own edge.
//
// Cancel, subscribe and delete of such a run answer like an ended run held here: a cancel reports it already
// ended, a subscription yields its state and ends, a delete removes the mirror's entry.
import type { Clock } from '../clock.js';
import type {
  LocalRuns,
  RemoteRuns,
  RunBounds,
  RunKey,
  RunUpdate,
  RunView,
} from '../placement/run-directory.js';
import type { FabricRunRecords, MirrorEntry } from './run-record-mirror.js';

export interface RunFailoverOptions {
  /** The other edges' registries (peer calls). */
  remote: RemoteRuns;
  mirror: FabricRunRecords;
  /** This edge. */
  edgeId: string;
  /** True while `edgeId` is a live member of the cluster. */
  isLive(edgeId: string): boolean;
  /** This edge's registry (for the kind's hook); undefined until it is served. */
  local(): LocalRuns | undefined;
  /** The ended-run TTL per kind (the registry's bounds). */
  bounds(kind: RunKey['kind']): RunBounds;
  clock: Clock;
}

/** RemoteRuns that fall back to the fabric's copy for runs whose edge left the cluster. */
export function withRunFailover(options: RunFailoverOptions): RemoteRuns {
  const { remote, mirror } = options;

  /** The mirror's entry of `key` when its edge is gone and it is not past its TTL. */
  const orphan = async (key: RunKey): Promise<MirrorEntry | undefined> => {
    const entry = await mirror.read(key);
    if (!entry) return undefined;
    const { record } = entry;
    const holder = record.edgeId;
    if (holder !== options.edgeId && options.isLive(holder)) return undefined;
    const now = options.clock.now();
    if (record.endedAt !== undefined && record.endedAt + options.bounds(key.kind).ttlMs <= now)
      return undefined;
    return entry;
  };

  /** The answer for an orphaned entry: as it ended, or ended here (and written back) when it was left going. */
  const settle = async (key: RunKey, entry: MirrorEntry): Promise<RunView> => {
    const { record } = entry;
    if (record.endedAt !== undefined) return { state: record.state, ended: true };
    const local = options.local();
    if (!local) return { state: record.state, ended: false };
    const state = local.abandonedEnding(key.kind, record.state, {
      edgeId: record.edgeId,
      atMs: options.clock.now(),
      answeredBy: options.edgeId,
    });
    if (await mirror.endByFailover(entry, state)) return { state, ended: true };
    // Someone wrote first (the edge came back, or another failover): their record is the answer.
    const again = await mirror.read(key);
    if (again?.record.endedAt !== undefined) return { state: again.record.state, ended: true };
    return { state, ended: true };
  };

  /** `ask` of the other edges; on none (or no answer) the mirror's orphan, else what `ask` had. */
  const fallback = async <T>(
    key: RunKey,
    ask: () => Promise<T | undefined>,
    fromMirror: (entry: MirrorEntry) => Promise<T>,
  ): Promise<T | undefined> => {
    let answer: T | undefined;
    let unanswered: Error | undefined;
    try {
      answer = await ask();
    } catch (error) {
      unanswered = error instanceof Error ? error : new Error(String(error));
    }
    if (answer !== undefined) return answer;
    const entry = await orphan(key).catch(() => undefined);
    if (entry) return fromMirror(entry);
    if (unanswered !== undefined) throw unanswered;
    return undefined;
  };

  return {
    get: (key) =>
      fallback(
        key,
        () => remote.get(key),
        (entry) => settle(key, entry),
      ),
    cancel: (key, reason) =>
      fallback(
        key,
        () => remote.cancel(key, reason),
        async (entry) => ({ view: await settle(key, entry), alreadyEnded: true }),
      ),
    subscribe: (key, signal) =>
      fallback(
        key,
        () => remote.subscribe(key, signal),
        async (entry) => {
          const view = await settle(key, entry);
          return endedStream(view.state);
        },
      ),
    delete: async (key) =>
      (await fallback(
        key,
        async () => ((await remote.delete(key)) ? true : undefined),
        (entry) => mirror.removeRead(entry),
      )) ?? false,
  };
}

/** An ended run's subscription: its state, then the end (as the registry streams a run that has ended). */
function endedStream(state: unknown): AsyncIterable<RunUpdate> {
  return {
    [Symbol.asyncIterator]() {
      let sent = false;
      return {
        next(): Promise<IteratorResult<RunUpdate, undefined>> {
          if (sent) return Promise.resolve({ done: true, value: undefined });
          sent = true;
          return Promise.resolve({ done: false, value: { state } });
        },
      };
    },
  };
}
