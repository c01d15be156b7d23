// Wires live config refresh into a running edge (a SurfaceFactory, listed before the admin surface or after it:
// the admin API looks the handler up per call). It creates the config refresher over the runtime's shared
// provider pool and the runtime's node-config push, and registers two things in the runtime's extras:
// `CONFIG_REFRESHER_KEY` (the refresher: `current()` is the config in force for live-appliable values) and the
// admin API's `REFRESH_HANDLER_KEY` (RefreshConfig RPC → refresher, RefreshError → gRPC status).
//
// With `refresh.enabled: false` nothing is registered and the admin API answers that refresh is disabled.
// The surface has no listener of its own (it is reached through the admin API); close() rejects refreshes still
// waiting for the lock so shutdown is not held up by their timers.
import { status } from '@grpc/grpc-js';
import type { RefreshConfigResponse } from '@iop/wire';
import { REFRESH_HANDLER_KEY } from '../admin/admin-server.js';
import type { RefreshHandler } from '../admin/admin-handlers.js';
import { AdminCallError } from '../admin/grpc-status.js';
import { RUNTIME_EXTRAS } from '../edge-runtime.js';
import type { Clock } from '../pool/clock.js';
import { sharedProviderPool } from '../pool/shared-pool.js';
import type { Surface, SurfaceContext, SurfaceFactory } from '../surface.js';
import { createConfigRefresher, type ConfigRefresher, type NodeConfigApplier } from './config-refresher.js';
import { isRefreshError } from './errors.js';
import { toRefreshConfigResponse } from './refresh-result.js';

/** Key of the ConfigRefresher in the runtime's extras. */
export const CONFIG_REFRESHER_KEY = 'configRefresher';

export interface RefreshSurfaceOptions {
  /** See ConfigRefresherOptions.waitMs. */
  waitMs?: number;
  /** See ConfigRefresherOptions.nodeTimeoutMs. */
  nodeTimeoutMs?: number;
  /** Clock of the shared pool when this surface is the one that creates it. */
  clock?: Clock;
}

export function createRefreshSurface(options: RefreshSurfaceOptions = {}): SurfaceFactory {
  return (context) => Promise.resolve(startRefresh(context, options));
}

function startRefresh(context: SurfaceContext, options: RefreshSurfaceOptions): Surface | undefined {
  const { config, extras } = context;
  if (!config.refresh.enabled) return undefined;
  const logger = context.logger.child({ component: 'config-refresh' });
  const pool = sharedProviderPool({ ...context, clock: options.clock });
  const configPath = extras.get(RUNTIME_EXTRAS.configPath);
  const refresher = createConfigRefresher({
    config,
    configPath: typeof configPath === 'string' ? configPath : undefined,
    routing: pool,
    applyNodeConfig: nodeApplier(extras),
    logger,
    waitMs: options.waitMs,
    nodeTimeoutMs: options.nodeTimeoutMs,
  });
  extras.set(CONFIG_REFRESHER_KEY, refresher);
  extras.set(REFRESH_HANDLER_KEY, refreshHandler(refresher));
  return {
    name: 'refresh',
    address: config.refresh.listen ? `admin API ${config.refresh.listen}` : 'no admin listener',
    close() {
      refresher.close();
      extras.delete(REFRESH_HANDLER_KEY);
      return Promise.resolve();
    },
  };
}

/** The runtime's node push, when the runtime offers one (a runtime without node links pushes nothing). */
function nodeApplier(extras: Map<string, unknown>): NodeConfigApplier | undefined {
  const apply = extras.get(RUNTIME_EXTRAS.applyNodeConfig);
  return typeof apply === 'function' ? (apply as NodeConfigApplier) : undefined;
}

/** The admin API's RefreshConfig handler over a refresher; failures without a result become gRPC statuses. */
export function refreshHandler(refresher: ConfigRefresher): RefreshHandler {
  return async (mode, configYaml, configPath): Promise<RefreshConfigResponse> => {
    try {
      return toRefreshConfigResponse(await refresher.refresh(mode, configYaml, configPath));
    } catch (error) {
      if (!isRefreshError(error)) throw error;
      const grpcCode = error.code === 'refresh_busy' ? status.ABORTED : status.UNAVAILABLE;
      throw new AdminCallError(grpcCode, error.code, error.message);
    }
  };
}
