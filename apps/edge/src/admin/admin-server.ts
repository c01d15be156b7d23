// The admin surface: serves the EdgeAdmin gRPC API (admin-handlers.ts) on `refresh.listen`.
//
// Security: without `refresh.admin_token` the server only listens on a loopback address and refuses to start
// otherwise; with a token every call must carry `authorization: Bearer <token>` (compared in constant time), and
// beyond loopback the server speaks TLS with the edge's certificate (admin-tls.ts) so the token never crosses
// the network in clear.
// `refresh.enabled` gates only RefreshConfig: the rest of the API (nodes list, runs, commands) stays available
// to local operators. An empty `refresh.listen` disables the surface.
//
// Lifecycle: `createAdminSurface(options)` returns a SurfaceFactory-compatible starter; starting binds the port
// (nothing happens before). `close()` ends open streams with UNAVAILABLE, lets unary calls finish for
// `closeGraceMs`, then forces the server down.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { EdgeAdminService } from '@iop/wire';
import type { AdminKeyConfig, HttpConfig, RefreshConfig, TlsConfig } from '@iop/config';
import type { Clock } from '../clock.js';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { EdgeService } from '../service/types.js';
import { createAdminHandlers, type AdminHandlers, type RefreshHandler } from './admin-handlers.js';
import type { PooledProviderStatus } from './admin-mapping.js';
import { refreshHandler } from './admin-refresh.js';
import type { Governance } from '../governance/governance.js';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import { recordedUsage } from '../governance/recorded-usage.js';
import { adminTlsFiles, readAdminServerTls } from './admin-tls.js';
import { AdminError } from './errors.js';
import { formatHostPort, isLoopbackHost, parseListenAddress } from '../net/listen-address.js';
import { createHostGuard } from '../http/host-guard.js';

export interface AdminSurfaceOptions {
  /** Provider pool status (ListProviders, NodeInfo.providers). Default: `service.providers()`. */
  providerStatus?: () => PooledProviderStatus[];
  /**
   * Config refresh handler. Default: the runtime's config refresher; none = RefreshConfig answers UNAVAILABLE
   * "config refresh is disabled".
   */
  refreshHandler?: RefreshHandler;
  /** How long close() lets running unary calls finish before forcing the server down. Default 2000 ms. */
  closeGraceMs?: number;
  /** Usage totals (GetUsage). Default: the runtime's governance; none = GetUsage answers UNAVAILABLE. */
  usage?: (query: UsageQuery) => UsageRow[] | Promise<UsageRow[]>;
}

/** What the admin surface uses of the runtime's core. */
export interface AdminSurfaceDeps {
  /** `edge.tls` supplies the certificate the admin API uses beyond loopback. */
  config: {
    refresh: Omit<RefreshConfig, 'admin_keys'> & Partial<Pick<RefreshConfig, 'admin_keys'>>;
    edge?: { tls: TlsConfig };
    http?: HttpConfig;
  };
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  /** Times the close grace. */
  clock: Clock;
  /** Live config refresh; undefined = RefreshConfig answers that refresh is disabled. */
  refresher: ConfigRefresher | undefined;
  /** Recorded usage (GetUsage); none = GetUsage answers UNAVAILABLE. */
  governance?: Pick<Governance, 'usage'>;
  /** Cluster mode: usage of every live edge added up (GetUsage answers with it instead of this edge's own). */
  clusterUsage?: (query: UsageQuery) => Promise<UsageRow[]>;
}

export interface AdminSurface {
  name: 'admin';
  /** Bound address, host:port (the real port when the config asked for port 0). */
  address: string;
  close(): Promise<void>;
}

export interface AdminServerOptions extends AdminSurfaceOptions {
  listen: string;
  /** '' or undefined = no authentication (loopback only) unless `keys` are given. */
  token?: string;
  /** `refresh.admin_keys`: named keys with a read or operator role. */
  keys?: readonly AdminKeyConfig[];
  /** The edge's certificate and key (PEM): required beyond loopback, where the token must not travel in clear. */
  tls?: { cert: Buffer; key: Buffer };
  /** `http.allowed_hosts`: names a call's `:authority` may carry besides the listener's own addresses. */
  allowedHosts?: readonly string[];
  refreshEnabled?: boolean;
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  /** Times the close grace. */
  clock: Clock;
}

export function createAdminSurface(
  options: AdminSurfaceOptions = {},
): (core: AdminSurfaceDeps) => Promise<AdminSurface | undefined> {
  return async (context) => {
    const { refresh } = context.config;
    if (!refresh.listen) return undefined;
    const refresher = context.refresher;
    return startAdminServer({
      ...options,
      refreshHandler: options.refreshHandler ?? (refresher ? refreshHandler(refresher) : undefined),
      usage: options.usage ?? recordedUsage(context),
      listen: refresh.listen,
      token: refresh.admin_token,
      keys: refresh.admin_keys ?? [],
      tls: await readAdminServerTls(adminTlsFiles(context.config)),
      allowedHosts: context.config.http?.allowed_hosts ?? [],
      refreshEnabled: refresh.enabled,
      service: context.service,
      events: context.events,
      logger: context.logger,
      clock: context.clock,
    });
  };
}

export async function startAdminServer(options: AdminServerOptions): Promise<AdminSurface> {
  const logger = options.logger.child({ component: 'admin' });
  const listen = parseListenAddress(options.listen, (message) => new AdminError('invalid_listen', message));
  const authenticated = Boolean(options.token) || (options.keys?.length ?? 0) > 0;
  if (!authenticated && !isLoopbackHost(listen.host)) {
    throw new AdminError(
      'insecure_listen',
      `refusing to serve the admin API on non-loopback address ${options.listen} without refresh.admin_token`,
    );
  }
  if (authenticated && !options.tls && !isLoopbackHost(listen.host)) {
    throw new AdminError(
      'insecure_listen',
      `refusing to send refresh.admin_token in clear on non-loopback address ${options.listen}: enable edge.tls`,
    );
  }
  // Known once bound (port 0 in tests); no call arrives before.
  const bound = { port: -1 };
  const handlers: AdminHandlers = createAdminHandlers({
    service: options.service,
    events: options.events,
    logger,
    providerStatus: options.providerStatus ?? (() => options.service.providers()),
    refreshHandler: () => options.refreshHandler,
    refreshEnabled: options.refreshEnabled,
    usage: options.usage,
    token: options.token,
    keys: options.keys,
    authority: {
      guard: createHostGuard({ listen: options.listen, names: options.allowedHosts ?? [] }),
      port: () => bound.port,
    },
  });
  const server = new Server();
  server.addService(EdgeAdminService, handlers.implementation);
  const bindAddress = formatHostPort(listen.host, listen.port);
  const port = await new Promise<number>((resolve, reject) => {
    const serverCredentials = options.tls
      ? ServerCredentials.createSsl(
          null,
          [{ cert_chain: options.tls.cert, private_key: options.tls.key }],
          false,
        )
      : ServerCredentials.createInsecure();
    server.bindAsync(bindAddress, serverCredentials, (error, boundPort) => {
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
  bound.port = port;
  const address = formatHostPort(listen.host, port);
  logger.info(
    { address, authentication: options.token ? 'bearer' : 'none', tls: options.tls !== undefined },
    'admin API listening',
  );

  let closing: Promise<void> | undefined;
  const closeGraceMs = options.closeGraceMs ?? 2000;
  return {
    name: 'admin',
    address,
    close() {
      closing ??= new Promise<void>((resolve) => {
        handlers.closeStreams();
        // Kept alive: the edge is shutting down and waits for this.
        const force = options.clock.setTimeout(
          () => {
            server.forceShutdown();
            resolve();
          },
          closeGraceMs,
          { keepAlive: true },
        );
        server.tryShutdown(() => {
          options.clock.clearTimeout(force);
          resolve();
        });
      });
      return closing;
    },
  };
}
