// The ops dashboard's HTTP handler: the JSON API of agent-contract/outer/ui-api.md, the live feed (SSE), the
// playground (SSE) and the embedded browser app. Transport-free: `createUiHandler` returns a node:http request
// listener; the surface (ui-surface.ts) binds it and owns the lifecycle. This file is the router: each route
// group lives in a module of its own, named after it —
//
//   /api/v1/login, /api/v1/logout       ui-auth.ts          /api/v1/overview      overview-route.ts
//   /api/v1/runs, /api/v1/runs/<id>     runs-route.ts       /api/v1/keys          keys-route.ts
//   /api/v1/sessions[/terminate]        sessions-route.ts   /api/v1/config[/refresh]  config-route.ts
//   /api/v1/stream                      live-feed.ts        /api/v1/playground    playground-route.ts
//   /api/v1/charts                      here (chart-series.ts)   everything else  the app's files (ui-assets.ts)
//
// Security: every request first passes the listener's Host / Origin guard (http/host-guard.ts): a Host that is
// not this listener (DNS rebinding) gets 421, a browser Origin that is not this listener 403, before anything is
// read. With a token (refresh.admin_token) every /api request but the login's then needs the token or a login
// (ui-auth.ts). Mutating requests (login, config refresh, terminate, playground) must be JSON, so a cross-site
// form cannot send them. The static app itself is public: it holds no data.
//
// Bounds: live feeds and playground runs have caps (503 over them); request bodies have a byte limit (413); node
// commands have a timeout; every feed ends when its client goes away or the handler closes.
import { systemClock, type Clock } from '../clock.js';
import type http from 'node:http';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import type { GovernorSnapshot } from '../governance/governor.js';
import type { UsageSource } from '../governance/recorded-usage.js';
import type { EdgeService } from '../service/types.js';
import type { ChartSeries } from './chart-series.js';
import type { RunLog } from './run-log.js';
import type { UiClusterEdge, UiDeparture, UiProvider, UiRefreshResult } from '@iop/ui-api';
import type { UiAssets } from './ui-assets.js';
import { UiError, isUiError } from './errors.js';
import { guardRequests, type HostGuard } from '../http/host-guard.js';
import type { UiLoginLimits } from './ui-logins.js';
import type { LoginThrottleLimits } from './login-throttle.js';
import { createUiAuth } from './ui-auth.js';
import { createConfigRoutes } from './config-route.js';
import { createKeysRoute } from './keys-route.js';
import { createLiveFeeds } from './live-feed.js';
import { createOverviewSource } from './overview-route.js';
import { createPlaygroundRoute, type PlaygroundStarter } from './playground-route.js';
import { createRunRoutes, RUN_PATH_PREFIX } from './runs-route.js';
import { createSessionRoutes } from './sessions-route.js';
import { sendErrorResponse, type MappedFailure } from '../surface-kit/error-response.js';
import { SECURITY_HEADERS, sendJson, sseFrame, uiHeaders } from './ui-http.js';

export interface UiLimits {
  /** Live feeds open at once. */
  maxStreams: number;
  /** Playground runs at once. */
  maxPlaygrounds: number;
  /** Largest request body. */
  maxBodyBytes: number;
  /** How often the live feed sends the overview. */
  overviewIntervalMs: number;
  /** How long a node has to answer a `sessions` command. */
  nodeCommandTimeoutMs: number;
}

export const DEFAULT_UI_LIMITS: Readonly<UiLimits> = Object.freeze({
  maxStreams: 32,
  maxPlaygrounds: 4,
  maxBodyBytes: 1024 * 1024,
  overviewIntervalMs: 1000,
  nodeCommandTimeoutMs: 5000,
});

export interface UiHandlerDeps {
  edgeId: string;
  version: string;
  /** '' = no authentication (the surface only allows that on loopback). */
  token: string;
  /** Served over HTTPS: the login cookie is marked Secure. */
  secure?: boolean;
  /** The listener's Host / Origin guard, applied to every request before anything else. */
  guard: HostGuard;
  /** Login lifetime and count. */
  loginLimits?: Partial<UiLoginLimits>;
  /** Failed-login throttle. */
  loginThrottle?: Partial<LoginThrottleLimits>;
  service: Pick<EdgeService, 'listNodes' | 'nodeCommand' | 'terminateSession' | 'agentRuns'>;
  /** Provider status of the shared pool. */
  providers: () => UiProvider[];
  /** Cluster mode only: per-edge figures for the overview. */
  clusterEdges?: () => UiClusterEdge[];
  /** The config in force (after live refreshes). */
  config: () => EdgeConfig;
  /** Classifies / applies a candidate edge.yaml (the same path as `iop-edge config refresh`); none = disabled. */
  refresh?: (mode: string, candidateYaml: string) => Promise<UiRefreshResult>;
  /** Pool rejections per model so far (429 = queue full / timeout, 503 = no provider). */
  rejections?: () => Promise<Map<string, { r429: number; r503: number }>>;
  /** Recorded usage for the Keys view (governance/recorded-usage.ts); none = the view answers 503. */
  usage?: UsageSource;
  /** The governor's live counters per key (Keys view). */
  liveLimits?: () => GovernorSnapshot[];
  playground?: PlaygroundStarter;
  /** The console's label of a node (node0, node1, ... in connection order). */
  nodeLabel: (nodeId: string) => string;
  departures: () => UiDeparture[];
  runLog: RunLog;
  charts: ChartSeries;
  assets: UiAssets;
  clock?: Clock;
  logger: Logger;
  limits?: Partial<UiLimits>;
}

export interface UiHandler {
  handle: http.RequestListener;
  /** Open live feeds and playground runs (tests; every one is released exactly once). */
  readonly openStreams: number;
  /** Live logins (tests: bounded, logout removes one). */
  readonly logins: number;
  readonly openPlaygrounds: number;
  /** Ends every live feed and playground stream; later API requests get 503. */
  close(): void;
}

type Route = (request: http.IncomingMessage, response: http.ServerResponse, url: URL) => void | Promise<void>;

export function createUiHandler(deps: UiHandlerDeps): UiHandler {
  const limits: UiLimits = { ...DEFAULT_UI_LIMITS, ...deps.limits };
  const clock = deps.clock ?? systemClock;
  const { logger } = deps;
  const maxBodyBytes = limits.maxBodyBytes;
  let closed = false;
  const auth = createUiAuth({ ...deps, clock, maxBodyBytes });
  const overview = createOverviewSource({ ...deps, clock, intervalMs: limits.overviewIntervalMs });
  const feeds = createLiveFeeds({
    ...deps,
    clock,
    overviewFrame: () => overview.frame(),
    maxStreams: limits.maxStreams,
    overviewIntervalMs: limits.overviewIntervalMs,
  });
  const playground = createPlaygroundRoute({
    ...deps,
    clock,
    maxPlaygrounds: limits.maxPlaygrounds,
    maxBodyBytes,
  });
  const runs = createRunRoutes(deps.runLog);
  const sessions = createSessionRoutes({
    ...deps,
    nodeCommandTimeoutMs: limits.nodeCommandTimeoutMs,
    maxBodyBytes,
  });
  const config = createConfigRoutes({ ...deps, maxBodyBytes });
  const keys = createKeysRoute({ ...deps, clock });

  /** Routes anyone past the Host / Origin guard may call (the login itself). */
  const publicRoutes = new Map<string, Route>([
    ['GET /api/v1/login', (_request, response) => auth.state(response)],
    ['POST /api/v1/login', (request, response) => auth.login(request, response)],
    ['POST /api/v1/logout', (request, response) => auth.logout(request, response)],
  ]);
  /** Routes that need the token or a login. */
  const apiRoutes = new Map<string, Route>([
    ['GET /api/v1/overview', async (_request, response) => sendJson(response, 200, await overview.current())],
    ['GET /api/v1/runs', (_request, response, url) => runs.list(response, url.searchParams)],
    ['GET /api/v1/keys', (_request, response, url) => keys(response, url.searchParams)],
    ['GET /api/v1/charts', (_request, response) => sendJson(response, 200, deps.charts.snapshot())],
    ['GET /api/v1/sessions', (_request, response) => sessions.list(response)],
    ['POST /api/v1/sessions/terminate', (request, response) => sessions.terminate(request, response)],
    ['GET /api/v1/config', (_request, response) => config.show(response)],
    ['POST /api/v1/config/refresh', (request, response) => config.refresh(request, response)],
    ['GET /api/v1/stream', (request, response) => feeds.open(request, response)],
    ['POST /api/v1/playground', (request, response) => playground.run(request, response)],
  ]);

  async function route(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://ui.invalid');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    if (!path.startsWith('/api/')) {
      if (method !== 'GET' && method !== 'HEAD') throw new UiError('method_not_allowed', `${method} ${path}`);
      serveAsset(response, path, method === 'HEAD');
      return;
    }
    if (closed) throw new UiError('shutting_down', 'the edge is shutting down');
    const key = `${method} ${path}`;
    const open = publicRoutes.get(key);
    if (open) return open(request, response, url);
    if (!auth.authorized(request)) throw new UiError('unauthorized', 'this dashboard needs the admin token');
    const handler = apiRoutes.get(key);
    if (handler) return handler(request, response, url);
    if (method === 'GET' && path.startsWith(RUN_PATH_PREFIX)) return runs.detail(response, path);
    throw new UiError('not_found', `no API ${method} ${path}`);
  }

  function serveAsset(response: http.ServerResponse, path: string, headOnly: boolean): void {
    // Client-side routes (#/...) never reach the server; every unknown path that is not an asset is the app.
    const asset = deps.assets.get(path) ?? (path.includes('.') ? undefined : deps.assets.get('/index.html'));
    if (!asset) throw new UiError('not_found', `no file ${path}`);
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': asset.contentType,
      'content-length': asset.body.length,
      'cache-control': path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
    response.end(headOnly ? undefined : asset.body);
  }

  function handleGuarded(request: http.IncomingMessage, response: http.ServerResponse): void {
    route(request, response).catch((error: unknown) => sendError(response, error, logger));
  }

  return {
    handle: guardRequests(deps.guard, handleGuarded),
    get logins() {
      return auth.logins;
    },
    get openStreams() {
      return feeds.count;
    },
    get openPlaygrounds() {
      return playground.count;
    },
    close() {
      closed = true;
      feeds.close();
      playground.close();
    },
  };
}

/** The one answer of a failed request: in-band on a started stream, else the kit's error answer. */
function sendError(response: http.ServerResponse, error: unknown, logger: Logger): void {
  const uiError = isUiError(error) ? error : UiError.from(error);
  if (response.headersSent) {
    // A stream that already started (playground): report in-band, then end it.
    if (!response.writableEnded) {
      response.end(sseFrame('error', { code: uiError.code, message: uiError.message }));
    }
    return;
  }
  sendErrorResponse(error, mapUiFailure(uiError), {
    surface: 'ui',
    logger,
    response,
    path: new URL(response.req.url ?? '/', 'http://ui.invalid').pathname,
  });
}

/** A dashboard error as its answer: its status, `{error: {code, message}}`, the dashboard's headers. */
function mapUiFailure(error: UiError): MappedFailure {
  return {
    status: error.status,
    body: { error: { code: error.code, message: error.message } },
    headers: {
      ...uiHeaders(),
      ...(error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) }),
    },
    code: error.code,
  };
}
