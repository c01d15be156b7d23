// One provider as the admin API, the console `/providers`, the dashboard and the cluster view show it: the shape
// the pool reports and every layer above it (placement, cluster, service, surfaces) passes on unchanged.

export type ProviderRunStatus = 'ready' | 'disabled' | 'offline';
/**
 * One health state per provider: the node's active probe (healthy, unhealthy, unreachable, unknown), overridden by
 * the passive circuit when it is `open` or `half_open` (an unhealthy or unreachable probe wins over the circuit).
 */
export type ProviderHealthStatus =
  'healthy' | 'unhealthy' | 'unreachable' | 'unknown' | 'disabled' | 'open' | 'half_open';

/** One provider as the admin API and the console `/providers` show it (field names match admin.proto). */
export interface ProviderStatus {
  providerId: string;
  nodeId: string;
  status: ProviderRunStatus;
  health: ProviderHealthStatus;
  /** 0 when disabled. */
  capacity: number;
  inFlight: number;
  /** Waiters in the queues this provider can serve (a waiter may count for several providers). */
  queued: number;
  servedModels: string[];
  priority: number;
  /**
   * Served models the node reports loaded on the provider's backend (Ollama /api/ps). The pool always sets both
   * resident fields; optional for views built elsewhere (a remote edge's, older test fixtures).
   */
  residentModels?: string[];
  /** How far `residentModels` is known: unknown = not reported (an older node, a backend that cannot say). */
  residentState?: 'fresh' | 'stale' | 'unknown';
}
