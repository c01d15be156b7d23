// Limits shared by several edges (cluster mode): a key's limits are counted on one home edge, and the run's
// principal carries the lease taken there (`Principal.lease`) to whichever edge admits it. The service calls this
// before any capacity is taken; the cluster implements it over the fabric (cluster/cluster-limits.ts).
import type { Principal } from './principal.js';

export interface SharedLimits {
  /**
   * Reserves the key's limits for one run on its home edge. Resolves the principal the run is admitted with: a
   * copy carrying the lease, or the principal itself when the home did not answer (the admitting edge then counts
   * it locally). Throws GovernanceError when the home refuses. `child`: a child run (an agent's model call), which
   * `max_concurrent` does not count (governor.ts).
   */
  reserve(principal: Principal, estimatedTokens: number, child?: boolean): Promise<Principal>;
}
