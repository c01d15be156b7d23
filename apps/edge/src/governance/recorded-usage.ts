// The one answer to "what usage was recorded": in cluster mode every live edge's totals added up
// (cluster/cluster-usage.ts), else this edge's usage store. Every reader takes it from here — the admin API's
// GetUsage (`iop-edge usage`) and the dashboard's Keys view — so they show the same figures.
import type { Governance } from './governance.js';
import type { UsageQuery, UsageRow } from './usage-store.js';

export type UsageSource = (query: UsageQuery) => UsageRow[] | Promise<UsageRow[]>;

export interface UsageRecorders {
  governance?: Pick<Governance, 'usage'>;
  /** Cluster mode only: the usage of every live edge added up. */
  clusterUsage?: (query: UsageQuery) => Promise<UsageRow[]>;
}

/** The usage readers answer with; undefined when nothing is recorded (no governance). */
export function recordedUsage(recorders: UsageRecorders): UsageSource | undefined {
  if (recorders.clusterUsage) return recorders.clusterUsage;
  const governance = recorders.governance;
  return governance ? (query) => governance.usage(query) : undefined;
}
