// Runtime step "config refresh": the live refresh of node configuration (all or nothing: node/node-config-push.ts)
// and, when `refresh.enabled`, the config refresher that applies a new routing table, circuit settings, pool and
// API keys together. In cluster mode a refresh asked of this edge is applied on every edge, all or nothing.
import type { EdgeConfig } from '@iop/config';
import type { EdgeCluster } from '../cluster/edge-cluster.js';
import type { Logger } from '../logging.js';
import type { NodeConfigApplyOptions, NodeConfigApplyOutcome } from '../node/node-config-push.js';
import type { Clock } from '../clock.js';
import { createConfigRefresher, type ConfigRefresher } from '../refresh/config-refresher.js';
import type { LocalCore } from './local-core.js';

type ApplyNodeConfig = (
  config: EdgeConfig,
  options?: NodeConfigApplyOptions,
) => Promise<NodeConfigApplyOutcome>;

export interface ConfigRefreshWiring {
  applyNodeConfig: ApplyNodeConfig;
  /** This edge's refresher (closed at shutdown); undefined when `refresh.enabled` is false. */
  refresher: ConfigRefresher | undefined;
  /** What surfaces use: the refresher, in cluster mode wrapped to apply on every edge. */
  servedRefresher: ConfigRefresher | undefined;
}

export function wireConfigRefresh(
  options: {
    config: EdgeConfig;
    configPath: string;
    logger: Logger;
    clock: Clock;
    /** Config refresher timings (tests shorten them). */
    refresh?: { waitMs?: number; nodeTimeoutMs?: number };
  },
  local: LocalCore,
  cluster: EdgeCluster | undefined,
): ConfigRefreshWiring {
  const { config, logger } = options;
  const { nodeConfigs, routing, circuits, pool, governance } = local;
  const applyNodeConfig: ApplyNodeConfig = async (next, applyOptions = {}) => {
    const outcome = await nodeConfigs.apply(next.nodes, applyOptions);
    logger.info(
      {
        status: outcome.status,
        results: outcome.results.map((result) => `${result.node_id}:${result.status}`),
      },
      'node configuration pushed',
    );
    return outcome;
  };
  const refresher = config.refresh.enabled
    ? createConfigRefresher({
        config,
        clock: options.clock,
        configPath: options.configPath,
        // The pool's table and the API keys (live) switch together on apply.
        routing: {
          applyConfig(next: EdgeConfig) {
            routing.current = next.routing;
            circuits.applyConfig(next.routing.circuit_breaker);
            circuits.retain(new Set(next.nodes.flatMap((node) => node.providers.map((entry) => entry.id))));
            pool.applyConfig(next);
            governance.applyConfig(next);
          },
        },
        applyNodeConfig,
        logger: logger.child({ component: 'config-refresh' }),
        waitMs: options.refresh?.waitMs,
        nodeTimeoutMs: options.refresh?.nodeTimeoutMs,
      })
    : undefined;
  const servedRefresher =
    cluster && refresher ? cluster.attachRefresher(refresher, options.configPath) : refresher;
  return { applyNodeConfig, refresher, servedRefresher };
}
