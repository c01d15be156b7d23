// The ops dashboard's HTTP handler: the JSON API of agent-contract/outer/ui-api.md, the live feed (SSE), the
// playground (SSE) and the embedded browser app. Transport-free: `createUiHandler` returns a node:http request
// listener; the surface (ui-surface.ts) binds it and owns the lifecycle.
//
// Security: every request first passes the listener's Host / Origin guard (http/host-guard.ts): a Host that is
// not this listener (DNS rebinding) gets 421, a browser Origin that is not this listener 403, before anything is
// read. With a token (refresh.admin_token) every /api request then needs `Authorization: Bearer <token>` (scripts)
// or the `iop_ui_session` cookie that `POST /api/v1/login` sets after checking the token: a random login id
// (ui-logins.ts) — never the token — HttpOnly, SameSite=Strict, Secure over HTTPS, with an expiry;
// `POST /api/v1/logout` forgets it. Logins are throttled per client address and edge-wide (login-throttle.ts,
// 429 + Retry-After). Mutating requests (login, config refresh, terminate, playground) must be JSON, so a
// cross-site form cannot send them. The static app itself is public: it holds no data.
//
// Bounds: live feeds and playground runs have caps (503 over them); request bodies have a byte limit (413); node
// commands have a timeout; every feed ends when its client goes away or the handler closes.
import { systemClock, type Clock } from '../clock.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import { create, type RunEventPart } from '@iop/wire';
import type { EdgeConfig } from '@iop/config';
import { redactConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import type { EdgeService } from '../service/types.js';
import type { ChartSeries } from './chart-series.js';
import type { RunLog, RunFilter } from './run-log.js';
import type {
  UiClusterEdge,
  UiDeparture,
  UiDiscovered,
  UiModel,
  UiNode,
  UiNodeSessions,
  UiOverview,
  UiPlaygroundEvents,
  UiProvider,
  UiRefreshResult,
  UiRun,
  UiStreamEvents,
} from '@iop/ui-api';
import type { UiAssets } from './ui-assets.js';
import { UiError, isUiError } from './errors.js';
import { guardRequests, type HostGuard } from '../http/host-guard.js';
import { createUiLogins, type UiLoginLimits } from './ui-logins.js';
import { createLoginThrottle, type LoginThrottleLimits } from './login-throttle.js';

/** A playground run as the surface starts it: already placed on a provider, its parts ending after the terminal. */
export interface PlaygroundRun {
  runId: string;
  providerId: string;
  nodeId: string;
  queueMs: number;
  parts: AsyncIterable<RunEventPart>;
  /** Call exactly once when done (finally): cancels an unfinished run and returns its capacity. */
  finish(reason: string): void;
}

export interface PlaygroundRequest {
  model: string;
  prompt: string;
  maxTokens?: number;
}

export type PlaygroundStarter = (request: PlaygroundRequest, signal: AbortSignal) => Promise<PlaygroundRun>;

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

/**
 * The login cookie: a random login id, never the admin token. Its name predates the UiLogin naming and stays, so an
 * upgrade does not sign everyone out.
 */
export const UI_COOKIE = 'iop_ui_session';
const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
};

export function createUiHandler(deps: UiHandlerDeps): UiHandler {
  const limits: UiLimits = { ...DEFAULT_UI_LIMITS, ...deps.limits };
  const clock = deps.clock ?? systemClock;
  const closers = new Set<() => void>();
  let playgrounds = 0;
  let streams = 0;
  let closed = false;
  const logins = createUiLogins(clock, deps.loginLimits);
  const throttle = createLoginThrottle(clock, deps.loginThrottle);

  function authorized(request: http.IncomingMessage): boolean {
    if (!deps.token) return true;
    const header = request.headers.authorization ?? '';
    if (header.startsWith('Bearer ') && sameSecret(header.slice(7), deps.token)) return true;
    const cookie = cookieValue(request.headers.cookie ?? '', UI_COOKIE);
    return cookie !== undefined && logins.valid(cookie);
  }

  function loginCookie(value: string, maxAgeSeconds: number): string {
    return `${UI_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${deps.secure ? '; Secure' : ''}`;
  }

  async function login(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    checkMutation(request);
    const address = request.socket.remoteAddress ?? 'unknown';
    const waitMs = throttle.retryAfterMs(address);
    if (waitMs > 0) {
      const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
      deps.logger.warn({ client: address, retry_after_s: retryAfterSeconds }, 'ui: login throttled');
      throw new UiError('too_many_attempts', `too many failed logins; try again in ${retryAfterSeconds} s`, {
        retryAfterSeconds,
      });
    }
    const body = await readJson(request, limits.maxBodyBytes);
    if (!deps.token) {
      sendJson(response, 200, { authenticated: true, token_required: false });
      return;
    }
    const token = typeof body.token === 'string' ? body.token : '';
    if (!sameSecret(token, deps.token)) {
      throttle.failed(address);
      deps.logger.warn({ client: address }, 'ui: login with a wrong token');
      throw new UiError('unauthorized', 'wrong token');
    }
    throttle.succeeded(address);
    const login = logins.create();
    const maxAge = Math.max(1, Math.floor((login.expiresAtMs - clock.now()) / 1000));
    response.setHeader('set-cookie', loginCookie(login.id, maxAge));
    sendJson(response, 200, {
      authenticated: true,
      token_required: true,
      expires_at_ms: login.expiresAtMs,
    });
  }

  function logout(request: http.IncomingMessage, response: http.ServerResponse): void {
    checkMutation(request);
    const cookie = cookieValue(request.headers.cookie ?? '', UI_COOKIE);
    if (cookie !== undefined) logins.revoke(cookie);
    response.setHeader('set-cookie', loginCookie('', 0));
    sendJson(response, 200, { authenticated: false });
  }

  function overview(rejections: Map<string, { r429: number; r503: number }>): UiOverview {
    const config = deps.config();
    const providers = deps.providers();
    const nodes: UiNode[] = deps.service.listNodes().map((node) => ({
      node_id: node.nodeId,
      alias: node.alias,
      label: deps.nodeLabel(node.nodeId),
      os: node.os,
      arch: node.arch,
      hostname: node.hostname,
      agent_version: node.agentVersion,
      remote_address: node.remoteAddress,
      connected_since_ms: node.connectedSinceUnixMs,
      last_heartbeat_ms: node.lastHeartbeatUnixMs,
      adapters: [...node.adapters],
      providers: node.providers.map((provider) => ({
        provider_id: provider.providerId,
        health: circuitHealth(providers, node.nodeId, provider.providerId) ?? provider.health,
        detail: provider.detail,
        cause: provider.cause,
        checked_at_ms: provider.checkedAtUnixMs,
      })),
      discovered: node.discovered ? discoveredView(node.discovered) : null,
    }));
    const models: UiModel[] = config.models.map((model) => {
      const ids = Object.keys(model.providers);
      const queued = Math.max(
        0,
        ...providers.filter((provider) => ids.includes(provider.provider_id)).map((p) => p.queued),
      );
      const rejected = rejections.get(model.id);
      return {
        id: model.id,
        display_name: model.display_name,
        providers: { ...model.providers },
        queued,
        rejected_429: rejected?.r429 ?? 0,
        rejected_503: rejected?.r503 ?? 0,
      };
    });
    return {
      edge_id: deps.edgeId,
      version: deps.version,
      now_ms: clock.now(),
      nodes,
      departures: deps.departures(),
      providers,
      models,
      routes: config.openai.model_routes.map((route) => ({
        model: route.model,
        node: route.node,
        adapter: route.adapter,
        target: route.target,
      })),
      fallback: {
        adapter: config.openai.adapter,
        target: config.openai.target,
        models: [...config.openai.models],
      },
      totals: {
        in_flight: providers.reduce((sum, provider) => sum + provider.in_flight, 0),
        queued: models.reduce((sum, model) => sum + model.queued, 0),
        runs_running: deps.runLog.running(),
      },
      agent_runs: deps.service.agentRuns().map((run) => ({
        run_id: run.runId,
        node_id: run.nodeId,
        principal: run.principal,
        model: run.model,
        live_children: run.liveChildren,
        children: run.children,
        tokens: run.tokens,
        child_tokens: run.childTokens,
      })),
      ...(deps.clusterEdges ? { cluster: { edges: deps.clusterEdges() } } : {}),
    };
  }

  async function currentOverview(): Promise<UiOverview> {
    return overview((await deps.rejections?.()) ?? new Map<string, { r429: number; r503: number }>());
  }

  // Every open feed sends the overview each interval: they share one computation and one serialization per
  // half interval, so viewers cost bytes on the wire, not a fresh walk of the fleet each.
  let sharedFeed: { atMs: number; frame: Promise<string> } | undefined;
  function overviewFrame(): Promise<string> {
    const now = clock.now();
    if (!sharedFeed || now - sharedFeed.atMs >= limits.overviewIntervalMs / 2) {
      const frame = currentOverview().then((value) => sseFrame('overview', value));
      sharedFeed = { atMs: now, frame };
      frame.catch(() => {
        if (sharedFeed?.frame === frame) sharedFeed = undefined;
      });
    }
    return sharedFeed.frame;
  }

  async function listSessions(): Promise<UiNodeSessions[]> {
    const config = deps.config();
    const out: UiNodeSessions[] = [];
    const jobs: Promise<void>[] = [];
    for (const node of deps.service.listNodes()) {
      const nodeConfig = config.nodes.find((entry) => entry.id === node.nodeId);
      const adapters = (nodeConfig?.adapters.instances ?? [])
        .filter((instance) => instance.type === 'cli' && instance.enabled)
        .map((instance) => instance.name);
      for (const adapter of adapters) {
        const row: UiNodeSessions = { node_id: node.nodeId, adapter, sessions: [], error: '' };
        out.push(row);
        jobs.push(
          deps.service
            .nodeCommand({
              node: node.nodeId,
              request: create.nodeCommandRequest({ command: 'sessions', adapter }),
              timeoutMs: limits.nodeCommandTimeoutMs,
            })
            .then(
              (response) => {
                if (!response.ok) row.error = response.error || 'the node refused the sessions command';
                else row.sessions = parseSessions(response.result);
              },
              (error: unknown) => {
                row.error = error instanceof Error ? error.message : String(error);
              },
            ),
        );
      }
    }
    await Promise.all(jobs);
    return out;
  }

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
    if (path === '/api/v1/login' && method === 'GET') {
      // Whether the app should offer a login and a sign-out; says nothing the login form would not.
      sendJson(response, 200, { token_required: deps.token !== '' });
      return;
    }
    if (path === '/api/v1/login' && method === 'POST') {
      await login(request, response);
      return;
    }
    if (path === '/api/v1/logout' && method === 'POST') {
      logout(request, response);
      return;
    }
    if (!authorized(request)) throw new UiError('unauthorized', 'this dashboard needs the admin token');
    const key = `${method} ${path}`;
    switch (key) {
      case 'GET /api/v1/overview':
        sendJson(response, 200, await currentOverview());
        return;
      case 'GET /api/v1/runs':
        sendJson(response, 200, { runs: deps.runLog.list(runFilter(url.searchParams)) });
        return;
      case 'GET /api/v1/charts':
        sendJson(response, 200, deps.charts.snapshot());
        return;
      case 'GET /api/v1/sessions':
        sendJson(response, 200, { sessions: await listSessions() });
        return;
      case 'POST /api/v1/sessions/terminate': {
        checkMutation(request);
        const body = await readJson(request, limits.maxBodyBytes);
        const ref = {
          node: requiredString(body, 'node_id'),
          adapter: requiredString(body, 'adapter'),
          target: optionalString(body, 'target'),
          sessionId: requiredString(body, 'session_id'),
        };
        const nodeId = await deps.service.terminateSession(ref);
        deps.logger.info(
          { node: nodeId, adapter: ref.adapter, session: ref.sessionId },
          'ui: session terminated',
        );
        sendJson(response, 200, { terminated: true, node_id: nodeId });
        return;
      }
      case 'GET /api/v1/config':
        sendJson(response, 200, { config: redactConfig(deps.config()) });
        return;
      case 'POST /api/v1/config/refresh': {
        checkMutation(request);
        if (!deps.refresh)
          throw new UiError('refresh_disabled', 'config refresh is disabled (refresh.enabled)');
        const body = await readJson(request, limits.maxBodyBytes);
        const mode = requiredString(body, 'mode');
        const yaml = requiredString(body, 'config_yaml');
        const result = await deps.refresh(mode, yaml);
        deps.logger.info({ mode, status: result.status }, 'ui: config refresh');
        sendJson(response, 200, result);
        return;
      }
      case 'GET /api/v1/stream':
        openStream(response);
        return;
      case 'POST /api/v1/playground':
        checkMutation(request);
        await runPlayground(request, response);
        return;
      default:
        if (method === 'GET' && path.startsWith('/api/v1/runs/')) {
          const runId = decodeURIComponent(path.slice('/api/v1/runs/'.length));
          const detail = deps.runLog.get(runId);
          if (!detail) throw new UiError('not_found', `no run ${runId} in the dashboard's recent runs`);
          sendJson(response, 200, detail);
          return;
        }
        throw new UiError('not_found', `no API ${method} ${path}`);
    }
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

  function openStream(response: http.ServerResponse): void {
    if (streams >= limits.maxStreams)
      throw new UiError('too_many_streams', 'too many live dashboard feeds open');
    streams += 1;
    startSse(response);
    let ended = false;
    const send = <K extends keyof UiStreamEvents>(event: K, data: UiStreamEvents[K]): void => {
      if (!ended) response.write(sseFrame(event, data));
    };
    let sending = false;
    const tick = (): void => {
      if (sending || ended) return;
      sending = true;
      overviewFrame()
        .then((frame) => {
          if (!ended) response.write(frame);
        })
        .catch((error: unknown) => deps.logger.warn({ error: String(error) }, 'ui: overview failed'))
        .finally(() => (sending = false));
    };
    const timer = setInterval(tick, limits.overviewIntervalMs);
    const chartTimer = setInterval(
      () => send('charts', deps.charts.snapshot()),
      Math.max(limits.overviewIntervalMs * 5, 1000),
    );
    const unobserve = deps.runLog.observe((run: UiRun) => send('run', run));
    const end = (): void => {
      if (ended) return;
      ended = true;
      streams -= 1;
      clearInterval(timer);
      clearInterval(chartTimer);
      unobserve();
      closers.delete(end);
      if (!response.writableEnded) response.end();
    };
    closers.add(end);
    // The response's close is the reliable signal: the client went away, or the stream was ended here.
    response.on('close', end);
    tick();
    send('charts', deps.charts.snapshot());
  }

  async function runPlayground(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const body = await readJson(request, limits.maxBodyBytes);
    const model = requiredString(body, 'model');
    const prompt = requiredString(body, 'prompt');
    const maxTokens = body.max_tokens;
    if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) {
      throw new UiError('invalid_request', 'max_tokens must be a positive integer');
    }
    if (!deps.playground) throw new UiError('playground_disabled', 'no provider pool to send prompts to');
    if (playgrounds >= limits.maxPlaygrounds) {
      throw new UiError('too_many_playgrounds', 'too many playground prompts running; try again shortly');
    }
    playgrounds += 1;
    const abort = new AbortController();
    const onClose = (): void => abort.abort(new Error('the dashboard client went away'));
    response.on('close', onClose);
    closers.add(onClose);
    let run: PlaygroundRun | undefined;
    try {
      const started = clock.now();
      run = await deps.playground(
        { model, prompt, maxTokens: maxTokens as number | undefined },
        abort.signal,
      );
      deps.runLog.annotate(run.runId, {
        surface: 'ui',
        model,
        provider: run.providerId,
        queue_ms: Math.round(run.queueMs),
      });
      startSse(response);
      const send = <K extends keyof UiPlaygroundEvents>(event: K, data: UiPlaygroundEvents[K]): void => {
        if (!response.writableEnded) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      send('meta', {
        run_id: run.runId,
        model,
        provider: run.providerId,
        node_id: run.nodeId,
        queue_ms: Math.round(run.queueMs),
      });
      let usage: { prompt: number; completion: number } | undefined;
      for await (const part of run.parts) {
        switch (part.type) {
          case 'text-delta':
            send('delta', { text: part.text });
            break;
          case 'usage':
            usage = { prompt: part.usage.promptTokens, completion: part.usage.completionTokens };
            break;
          case 'complete':
          case 'error':
          case 'cancelled': {
            const duration = clock.now() - started;
            const backend = part.type === 'cancelled' ? 0 : part.backendMs;
            send('done', {
              status: part.type === 'complete' ? 'completed' : part.type,
              error: part.type === 'error' ? `${part.code}: ${part.message}` : '',
              duration_ms: duration,
              overhead_ms: backend > 0 ? Math.max(0, duration - backend) : null,
              prompt_tokens: usage?.prompt ?? null,
              completion_tokens: usage?.completion ?? null,
            });
            break;
          }
          case 'start':
          case 'reasoning-delta':
          case 'tool-call':
          case 'progress':
          case 'embeddings':
            break;
          default: {
            const unknown: never = part;
            throw new Error(`unknown run event part ${JSON.stringify(unknown)}`);
          }
        }
      }
      response.end();
    } finally {
      run?.finish('the dashboard client went away');
      playgrounds -= 1;
      response.off('close', onClose);
      closers.delete(onClose);
    }
  }

  function handleGuarded(request: http.IncomingMessage, response: http.ServerResponse): void {
    route(request, response).catch((error: unknown) => {
      const uiError = isUiError(error) ? error : UiError.from(error);
      if (uiError.status >= 500 && !isUiError(error)) {
        deps.logger.error({ error: uiError.message, code: uiError.code }, 'ui: request failed');
      }
      if (response.headersSent) {
        // A stream that already started (playground): report in-band, then end it.
        if (!response.writableEnded) {
          response.write(
            `event: error\ndata: ${JSON.stringify({ code: uiError.code, message: uiError.message })}\n\n`,
          );
          response.end();
        }
        return;
      }
      if (uiError.retryAfterSeconds !== undefined) {
        response.setHeader('retry-after', String(uiError.retryAfterSeconds));
      }
      sendJson(response, uiError.status, { error: { code: uiError.code, message: uiError.message } });
    });
  }

  return {
    handle: guardRequests(deps.guard, handleGuarded),
    get logins() {
      return logins.size;
    },
    get openStreams() {
      return streams;
    },
    get openPlaygrounds() {
      return playgrounds;
    },
    close() {
      closed = true;
      for (const closer of [...closers]) closer();
    },
  };
}

function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function startSse(response: http.ServerResponse): void {
  response.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}

/**
 * Mutations must be JSON: a cross-site form cannot send that content type without a preflight. (A foreign Origin
 * never gets here: the listener's guard compares it with the listener's own names, not with the Host the page
 * chose.)
 */
function checkMutation(request: http.IncomingMessage): void {
  const type = request.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('application/json')) {
    throw new UiError('unsupported_media_type', 'send the request body as application/json');
  }
}

async function readJson(request: http.IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number(request.headers['content-length'] ?? '0');
  if (declared > maxBytes) throw new UiError('body_too_large', `the request body exceeds ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new UiError('body_too_large', `the request body exceeds ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let value: unknown;
  try {
    value = text === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new UiError('invalid_json', 'the request body is not JSON', { cause: error });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UiError('invalid_request', 'the request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') {
    throw new UiError('invalid_request', `${field} is required (a non-empty string)`);
  }
  return value;
}

function optionalString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new UiError('invalid_request', `${field} must be a string`);
  return value;
}

function runFilter(params: URLSearchParams): RunFilter {
  const limit = params.get('limit');
  const parsed = limit === null ? undefined : Number(limit);
  if (parsed !== undefined && (!Number.isInteger(parsed) || parsed < 1)) {
    throw new UiError('invalid_request', 'limit must be a positive integer');
  }
  return {
    status: params.get('status') ?? undefined,
    model: params.get('model') ?? undefined,
    provider: params.get('provider') ?? undefined,
    node: params.get('node') ?? undefined,
    surface: params.get('surface') ?? undefined,
    text: params.get('q') ?? undefined,
    limit: parsed,
  };
}

function discoveredView(discovered: NodeDiscovered): UiDiscovered {
  return {
    backends: discovered.backends.map((backend) => ({
      kind: backend.kind,
      base_url: backend.baseUrl,
      models: [...backend.models],
      loaded_models: [...backend.loadedModels],
      version: backend.version,
    })),
    clis: discovered.clis.map((cli) => ({ name: cli.name, path: cli.path, version: cli.version })),
    host: {
      cpu_cores: discovered.host.cpuCores,
      memory_bytes: discovered.host.memoryBytes,
      gpus: discovered.host.gpus.map((gpu) => ({
        name: gpu.name,
        vendor: gpu.vendor,
        memory_bytes: gpu.memoryBytes,
      })),
    },
    discovered_at_ms: discovered.discoveredAtUnixMs,
  };
}

/** `session.<i>.<field>` entries of a `sessions` command result. */
export function parseSessions(result: Record<string, string>): UiNodeSessions['sessions'] {
  const groups = new Map<number, Record<string, string>>();
  for (const [key, value] of Object.entries(result)) {
    const match = /^session\.(\d+)\.([a-z_]+)$/.exec(key);
    if (!match) continue;
    const index = Number(match[1]);
    const group = groups.get(index) ?? {};
    group[match[2] ?? ''] = value;
    groups.set(index, group);
  }
  return [...groups.entries()]
    .sort(([left], [right]) => left - right)
    .map(([, group]) => ({
      session_id: group.session ?? group.session_id ?? '',
      target: group.target ?? '',
      mode: group.mode ?? '',
    }));
}

function cookieValue(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) {
      try {
        return decodeURIComponent(rest.join('='));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Compares digests, so neither the length nor a prefix of the token leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The pool's `open` / `half_open` for a provider whose circuit is not closed (one health state everywhere). */
function circuitHealth(
  providers: readonly UiProvider[],
  nodeId: string,
  providerId: string,
): string | undefined {
  const pooled = providers.find((entry) => entry.provider_id === providerId && entry.node_id === nodeId);
  return pooled && (pooled.health === 'open' || pooled.health === 'half_open') ? pooled.health : undefined;
}
