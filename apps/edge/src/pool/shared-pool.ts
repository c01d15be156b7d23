// One provider pool per edge runtime, shared by every surface that needs it (OpenAI dispatch, admin
// ListProviders, console /providers, config refresh). Surfaces receive the runtime's `extras` map; the first one
// to ask creates and starts the pool there, the others get the same instance.
import type { EdgeConfig } from '@iop/config';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { EdgeService } from '../service/types.js';
import type { Clock } from './clock.js';
import { createProviderPool, type ProviderPool } from './provider-pool.js';

/** Key of the shared pool in the runtime's extras map. */
export const PROVIDER_POOL_KEY = 'providerPool';

export interface SharedPoolContext {
  config: EdgeConfig;
  service: Pick<EdgeService, 'listNodes'>;
  events?: EventBus;
  logger: Logger;
  extras: Map<string, unknown>;
  clock?: Clock;
}

export function sharedProviderPool(context: SharedPoolContext): ProviderPool {
  const existing = context.extras.get(PROVIDER_POOL_KEY);
  if (existing !== undefined) return existing as ProviderPool;
  const pool = createProviderPool({
    config: context.config,
    nodes: () => context.service.listNodes(),
    events: context.events,
    clock: context.clock,
    logger: context.logger.child({ component: 'provider-pool' }),
  });
  pool.start();
  context.extras.set(PROVIDER_POOL_KEY, pool);
  return pool;
}
