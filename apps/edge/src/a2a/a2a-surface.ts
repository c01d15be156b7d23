// Starts the A2A listener (`a2a.listen`) over the edge service.
import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import { edgeHttpMetrics, type HttpMetricsRecorder } from '../metrics/http-metrics.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { EdgeService } from '../service/types.js';
import { listenHttp } from '../http/listen-http.js';
import { createHostGuard, guardRequests, urlAuthority } from '../http/host-guard.js';
import type { EdgeConfig } from '@iop/config';
import { EDGE_VERSION } from '../version.js';
import type { Governance } from '../governance/governance.js';
import type { PrincipalResolver } from '../governance/principal.js';
import { createA2AApp } from './a2a-app.js';
import { TaskManager, type A2ASettings } from './task-manager.js';
import { registerTaskRecovery } from './task-recovery.js';
import { registerPushMetrics, type PushMetrics } from './push/push-metrics.js';
import { createPushNotifications, type PushSettings } from './push/push-setup.js';
import type { PushStore } from './push/push-store.js';
import { SqlitePushStore } from './push/sqlite-push-store.js';

export interface A2ASurfaceOptions {
  listen: string;
  path: string;
  bearerToken: string;
  /** The keys in force (`openai.api_keys` plus the bearer token, live); none = the bearer token alone. */
  principals?: () => PrincipalResolver;
  edgeId: string;
  version: string;
  publicUrl?: string;
  /** `http.allowed_hosts`: names besides the listener's own addresses and `publicUrl` that Host may carry. */
  allowedHosts?: readonly string[];
  settings: A2ASettings;
  service: EdgeService;
  logger: Logger;
  /** Task and context timestamps (default: the system clock). */
  clock?: Clock;
  metrics?: HttpMetricsRecorder;
  /** Push notifications over this store (`<data_dir>/a2a-push.db`); none = the push methods answer -32003. */
  push?: { settings: PushSettings; store: PushStore; metrics?: PushMetrics; clock?: Clock };
}

export interface RunningA2ASurface {
  name: 'a2a';
  address: string;
  close(): Promise<void>;
}

export async function startA2ASurface(options: A2ASurfaceOptions): Promise<RunningA2ASurface> {
  const logger = options.logger.child({ component: 'a2a' });
  registerTaskRecovery(options.service.runRegistry);
  const tasks = new TaskManager(options.settings, {
    service: options.service,
    logger,
    clock: options.clock ?? systemClock,
    newId: randomUUID,
  });
  const push = options.push
    ? createPushNotifications({
        settings: options.push.settings,
        store: options.push.store,
        registry: options.service.runRegistry,
        clock: options.push.clock ?? systemClock,
        logger: logger.child({ component: 'a2a-push' }),
        userAgent: `iop-edge/${options.version}`,
        ...(options.push.metrics ? { metrics: options.push.metrics } : {}),
      })
    : undefined;
  // After registerTaskRecovery: tasks an earlier process left going are already `failed` when push looks at them.
  push?.start();
  const app = createA2AApp({
    path: options.path,
    bearerToken: options.bearerToken,
    ...(options.principals ? { principals: options.principals } : {}),
    edgeId: options.edgeId,
    version: options.version,
    adapter: options.settings.adapter,
    target: options.settings.target,
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    tasks,
    logger,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(push ? { push } : {}),
  });
  const guard = createHostGuard({
    listen: options.listen,
    names: [...(options.allowedHosts ?? []), ...urlAuthority(options.publicUrl ?? '')],
  });
  const closePush = async () => {
    await push?.close();
    await options.push?.store.close();
  };
  const listener = await listenHttp(options.listen, guardRequests(guard, app)).catch(
    async (error: unknown) => {
      await closePush();
      throw error;
    },
  );
  logger.info({ address: listener.address, path: options.path }, 'a2a listening');
  return {
    name: 'a2a',
    address: listener.address,
    close: async () => {
      await listener.close();
      await closePush();
    },
  };
}

/**
 * Context bounds (documented in agent-contract/outer/a2a-json-rpc-api.md); tasks are bounded by the service's run
 * registry (DEFAULT_RUN_BOUNDS: 1000 per edge, finished ones kept 1 hour).
 */
export const A2A_LIMITS = { maxContexts: 1000 } as const;

/** What the A2A surface uses of the runtime's core. */
export interface A2ASurfaceDeps {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock: Clock;
  metrics: EdgeMetrics;
  /** API keys (the same principals as the OpenAI surface). */
  governance?: Pick<Governance, 'keys'>;
}

/** The A2A surface as the runtime starts it: from `a2a.*` config, or nothing when disabled. */
export function createA2ASurface() {
  return async (context: A2ASurfaceDeps): Promise<RunningA2ASurface | undefined> => {
    const { a2a, edge } = context.config;
    if (!a2a.enabled) return undefined;
    return startA2ASurface({
      listen: a2a.listen,
      path: a2a.path,
      bearerToken: a2a.bearer_token,
      ...(context.governance ? { principals: context.governance.keys.a2a } : {}),
      edgeId: edge.id,
      version: EDGE_VERSION,
      ...(a2a.public_url ? { publicUrl: a2a.public_url } : {}),
      allowedHosts: context.config.http.allowed_hosts,
      settings: {
        node: a2a.node,
        adapter: a2a.adapter,
        target: a2a.target,
        sessionId: a2a.session_id,
        timeoutSec: a2a.timeout_sec,
        ...A2A_LIMITS,
      },
      service: context.service,
      logger: context.logger,
      clock: context.clock,
      metrics: edgeHttpMetrics(context.metrics, 'a2a'),
      push: {
        settings: {
          allowHosts: a2a.push.allow_hosts,
          maxAttempts: a2a.push.max_attempts,
          retryWindowMs: a2a.push.retry_window_sec * 1000,
          timeoutMs: a2a.push.timeout_ms,
        },
        store: SqlitePushStore.open(edge.data_dir, context.logger.child({ component: 'a2a-push' })),
        metrics: registerPushMetrics(context.metrics.registry),
      },
    });
  };
}
