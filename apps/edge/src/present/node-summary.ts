// What the edge knows about one connected node, as every layer above the registry sees it (service, pool,
// surfaces). Built by NodeLink.summary().
import type { NodeDiscovered } from './node-discovered.js';

export interface NodeSummary {
  nodeId: string;
  alias: string;
  agentVersion: string;
  os: string;
  arch: string;
  hostname: string;
  remoteAddress: string;
  connectedSinceUnixMs: number;
  lastHeartbeatUnixMs: number;
  adapters: string[];
  providers: ProviderHealthSummary[];
  /** What the node reported it can run; absent until it reports (older nodes never do). */
  discovered?: NodeDiscovered;
  /** `sha256:…` of the identity key the node proved when it registered (absent: an agent without identity). */
  identityFingerprint?: string;
  /** Cluster mode: the edge the node is connected to (absent on a single edge). */
  edgeId?: string;
}

export interface ProviderHealthSummary {
  providerId: string;
  health: 'healthy' | 'unhealthy' | 'unreachable' | 'unknown';
  /** What the node's last probe found, in words (a failure's error message). */
  detail: string;
  /** Why the last probe failed (ProviderHealthEntry.cause: connection_refused, timeout, tls, http_status…); '' when healthy. */
  cause: string;
  checkedAtUnixMs: number;
  /**
   * The models the provider's backend holds loaded (Ollama /api/ps), when the node reports it: absent = unknown
   * (an older node, a backend that cannot say, residency off or never answered). `stale` = the backend stopped
   * answering; the last list is kept for display and not placed by.
   */
  resident?: ResidentModels;
}

export interface ResidentModels {
  /** Names as the backend spells them (`llama3.2:latest`). */
  readonly models: readonly string[];
  readonly state: 'fresh' | 'stale';
}
