// Usage cluster-wide (cluster mode): each edge records the runs it ran in its own usage store
// (`<data_dir>/usage.db`); GetUsage (`iop-edge usage`, admin API) asked of any edge asks every other live edge
// for its totals (peer topic `usage`) and adds them up per group, so every edge answers with the cluster's totals.
// When a live edge cannot be asked (no sealed answer in time), the total is not known: the call fails
// (PeerCallError) rather than answer with a partial figure.
import { USAGE_GROUPS, type UsageQuery, type UsageRow } from '../governance/usage-store.js';
import type { PeerCalls } from './peer-calls.js';

export const USAGE_TOPIC = 'usage';

/** Adds up usage rows of several edges per group, sorted as one edge sorts them (most tokens first). */
export function mergeUsage(lists: readonly (readonly UsageRow[])[]): UsageRow[] {
  const groups = new Map<string, UsageRow>();
  for (const rows of lists) {
    for (const row of rows) {
      const group = groups.get(row.group);
      if (!group) {
        groups.set(row.group, { ...row, outcomes: { ...row.outcomes } });
        continue;
      }
      group.runs += row.runs;
      group.inputTokens += row.inputTokens;
      group.outputTokens += row.outputTokens;
      group.queueMsTotal += row.queueMsTotal;
      group.durationMsTotal += row.durationMsTotal;
      if (row.childRuns !== undefined) group.childRuns = (group.childRuns ?? 0) + row.childRuns;
      if (row.lastAtMs !== undefined) group.lastAtMs = Math.max(group.lastAtMs ?? 0, row.lastAtMs);
      for (const outcome of Object.keys(group.outcomes) as (keyof UsageRow['outcomes'])[]) {
        group.outcomes[outcome] += row.outcomes[outcome] ?? 0;
      }
    }
  }
  return [...groups.values()].sort(
    (first, second) =>
      second.inputTokens + second.outputTokens - (first.inputTokens + first.outputTokens) ||
      first.group.localeCompare(second.group),
  );
}

export interface ClusterUsage {
  /** This edge's totals plus every other live edge's. */
  usage(query: UsageQuery): Promise<UsageRow[]>;
  /** Tokens (prompt + completion) a key spent since a time in the other live edges' stores. */
  spentElsewhere(principalId: string, sinceMs: number): Promise<number>;
  close(): void;
}

export function createClusterUsage(deps: {
  peers: PeerCalls;
  /** This edge's own totals (its usage store). */
  local(query: UsageQuery): UsageRow[];
}): ClusterUsage {
  const stop = deps.peers.serve(USAGE_TOPIC, (payload) => {
    const query = payload as Partial<UsageQuery> | null;
    if (!query || !(USAGE_GROUPS as readonly unknown[]).includes(query.by)) {
      return Promise.resolve({ error: { code: 400, message: 'usage: unknown group' } });
    }
    return Promise.resolve({
      value: deps.local({ by: query.by as UsageQuery['by'], sinceMs: Number(query.sinceMs) || 0 }),
    });
  });
  return {
    async usage(query) {
      const local = deps.local(query);
      const answers = await deps.peers.gather(USAGE_TOPIC, query);
      const remote = [...answers.values()].flatMap((answer) =>
        'value' in answer && Array.isArray(answer.value) ? [answer.value as UsageRow[]] : [],
      );
      return mergeUsage([local, ...remote]);
    },
    async spentElsewhere(principalId, sinceMs) {
      const answers = await deps.peers.gather(USAGE_TOPIC, { by: 'key', sinceMs } satisfies UsageQuery);
      let spent = 0;
      for (const answer of answers.values()) {
        if (!('value' in answer) || !Array.isArray(answer.value)) continue;
        const row = (answer.value as UsageRow[]).find((entry) => entry.group === principalId);
        if (row) spent += row.inputTokens + row.outputTokens;
      }
      return spent;
    },
    close: stop,
  };
}
