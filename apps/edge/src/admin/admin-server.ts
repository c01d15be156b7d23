// The admin surface: serves the EdgeAdmin gRPC API (admin-handlers.ts) on `refresh.listen`.
//
// Security: without `refresh.admin_token` the server only listens on a loopback address and refuses to start
// otherwise; with a token every call must carry `authorization: Bearer <token>` (compared in constant time).
// `refresh.enabled` gates only RefreshConfig: the rest of the API (nodes list, runs, commands) stays available
// to local operators. An empty `refresh.listen` disables the surface.
//
// Lifecycle: `createAdminSurface(options)` returns a SurfaceFactory-compatible starter; starting binds the port
// (nothing happens before). `close()` ends open streams with UNAVAILABLE, lets unary calls finish for
// `closeGraceMs`, then forces the server down.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { EdgeAdminService, type ProviderStatus } from '@iop/wire';
import type { RefreshConfig } from '@iop/config';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import { PROVIDER_POOL_KEY } from '../pool/shared-pool.js';
import type { EdgeService } from '../service/types.js';
import { createAdminHandlers, type AdminHandlers, type RefreshHandler } from './admin-handlers.js';
import { AdminError } from './errors.js';
import { formatHostPort, isLoopbackHost, parseListenAddress } from '../net/listen-address.js';

export interface AdminSurfaceOptions {
  /**
   * Provider pool status (ListProviders, NodeInfo.providers). Default: the shared pool in the runtime's extras
   * when one exists, else an empty list.
   */
  providerStatus?: () => ProviderStatus[];
  /**
   * Config refresh handler. Default: the one registered in the runtime's extras under REFRESH_HANDLER_KEY (looked
   * up per call); none = RefreshConfig answers UNAVAILABLE "config refresh is disabled".
   */
  refreshHandler?: RefreshHandler;
  /** How long close() lets running unary calls finish before forcing the server down. Default 2000 ms. */
  closeGraceMs?: number;
}

/** What the admin surface needs from the runtime's SurfaceContext. */
export interface AdminSurfaceContext {
  config: { refresh: RefreshConfig };
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  /** The runtime's shared objects; the provider pool is found here when another surface created it. */
  extras?: Map<string, unknown>;
}

export interface AdminSurface {
  name: 'admin';
  /** Bound address, host:port (the real port when the config asked for port 0). */
  address: string;
  close(): Promise<void>;
}

export interface AdminServerOptions extends AdminSurfaceOptions {
  listen: string;
  /** '' or undefined = no authentication (loopback only). */
  token?: string;
  refreshEnabled?: boolean;
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  /** The runtime's shared objects (provider pool, refresh handler) used when the options do not name them. */
  extras?: Map<string, unknown>;
}

export function createAdminSurface(
  options: AdminSurfaceOptions = {},
): (context: AdminSurfaceContext) => Promise<AdminSurface | undefined> {
  return async (context) => {
    const { refresh } = context.config;
    if (!refresh.listen) return undefined;
    return startAdminServer({
      ...options,
      extras: context.extras,
      listen: refresh.listen,
      token: refresh.admin_token,
      refreshEnabled: refresh.enabled,
      service: context.service,
      events: context.events,
      logger: context.logger,
    });
  };
}

/**
 * Provider status from the runtime's shared provider pool, looked up on every call: the pool is created by the
 * first surface that dispatches (OpenAI), possibly after this one started. No pool → no providers.
 */
export function sharedPoolStatus(extras: Map<string, unknown> | undefined): () => ProviderStatus[] {
  return () => {
    const pool = extras?.get(PROVIDER_POOL_KEY) as { snapshot?: () => ProviderStatus[] } | undefined;
    return typeof pool?.snapshot === 'function' ? pool.snapshot() : [];
  };
}

/** Key under which the live-refresh feature registers its RefreshHandler in the runtime's extras. */
export const REFRESH_HANDLER_KEY = 'refreshHandler';

function extrasRefreshHandler(extras: Map<string, unknown> | undefined): RefreshHandler | undefined {
  const handler = extras?.get(REFRESH_HANDLER_KEY);
  return typeof handler === 'function' ? (handler as RefreshHandler) : undefined;
}

export async function startAdminServer(options: AdminServerOptions): Promise<AdminSurface> {
  const logger = options.logger.child({ component: 'admin' });
  const listen = parseListenAddress(options.listen, (message) => new AdminError('invalid_listen', message));
  if (!options.token && !isLoopbackHost(listen.host)) {
    throw new AdminError(
      'insecure_listen',
      `refusing to serve the admin API on non-loopback address ${options.listen} without refresh.admin_token`,
    );
  }
  const handlers: AdminHandlers = createAdminHandlers({
    service: options.service,
    events: options.events,
    logger,
    providerStatus: options.providerStatus ?? sharedPoolStatus(options.extras),
    refreshHandler: () => options.refreshHandler ?? extrasRefreshHandler(options.extras),
    refreshEnabled: options.refreshEnabled,
    token: options.token,
  });
  const server = new Server();
  server.addService(EdgeAdminService, handlers.implementation);
  const bindAddress = formatHostPort(listen.host, listen.port);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(bindAddress, ServerCredentials.createInsecure(), (error, boundPort) => {
      if (error) {
        reject(
          new AdminError(
            'listen_failed',
            `cannot listen on ${options.listen} for the admin API: ${error.message}`,
            {
              cause: error,
            },
          ),
        );
      } else resolve(boundPort);
    });
  });
  const address = formatHostPort(listen.host, port);
  logger.info({ address, authentication: options.token ? 'bearer' : 'none' }, 'admin API listening');

  let closing: Promise<void> | undefined;
  const closeGraceMs = options.closeGraceMs ?? 2000;
  return {
    name: 'admin',
    address,
    close() {
      closing ??= new Promise<void>((resolve) => {
        handlers.closeStreams();
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, closeGraceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closing;
    },
  };
}
