// The long-lived objects of one edge as the composition root hands them to surfaces (each surface factory declares
// the part it uses, `Pick<EdgeCore, ...>`). Its own module so surface.ts and edge-runtime.ts both import it and
// not each other.
import type { EdgeConfig } from '@iop/config';
import type { Clock } from './clock.js';
import type { ClosableEventBus } from './events/event-bus.js';
import type { Governance } from './governance/governance.js';
import type { UsageQuery, UsageRow } from './governance/usage-store.js';
import type { Logger } from './logging.js';
import type { EdgeMetrics } from './metrics/edge-metrics.js';
import type { NodeRegistry } from './node/node-registry.js';
import type { NodeStore } from './node/node-store.js';
import type { ProviderPool } from './pool/provider-pool.js';
import type { ConfigRefresher } from './refresh/config-refresher.js';
import type { EdgeServiceImpl } from './service/edge-service.js';
import type { ModelCallEntry } from './http/model-call-socket.js';
import type { ModelCallAuthenticator } from './service/model-call-auth.js';
import type { ResponseStore } from './openai/response-store.js';

/**
 * Everything a surface may use, by type. A surface factory takes a `Pick` of it, so what each surface depends on
 * is visible in its signature.
 */
export interface EdgeCore {
  config: EdgeConfig;
  configPath: string;
  logger: Logger;
  clock: Clock;
  events: ClosableEventBus;
  store: NodeStore;
  registry: NodeRegistry;
  pool: ProviderPool;
  service: EdgeServiceImpl;
  metrics: EdgeMetrics;
  /** API keys of each surface (live), their limits at admission, and the usage store. */
  governance: Governance;
  /** Live config refresh; undefined when `refresh.enabled` is false. */
  refresher: ConfigRefresher | undefined;
  /** Cluster mode only: usage totals of every live edge added up (GetUsage); undefined on one edge. */
  clusterUsage?: (query: UsageQuery) => Promise<UsageRow[]>;
  /** Where the OpenAI listener takes agents' model calls relayed by the node links (issue 42). */
  modelCallEntry: ModelCallEntry;
  /** Authenticates a model call with its run's secret and resolves its parent run. */
  modelCallAuth: ModelCallAuthenticator;
  /** Stored conversations of /v1/responses (`<data_dir>/responses.db`, bounded by `openai.responses`). */
  responseStore: ResponseStore;
  /** True once every surface started, false again when stopping (/readyz). */
  ready(): boolean;
}
