import { systemClock } from '../clock.js';
import { afterEach, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { create, type NodeCommandResponse, type RunEventPart } from '@iop/wire';
import { silentLogger } from '../logging.js';
import type { NodeCommandInput, NodeSummary, SessionRef } from '../service/types.js';
import { createChartSeries } from './chart-series.js';
import { UiError } from './errors.js';
import { createRunLog } from './run-log.js';
import type { UiKeys, UiProvider, UiRefreshResult } from '@iop/ui-api';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import type { PlaygroundRequest } from './playground-route.js';
import { createUiHandler, type UiHandler, type UiHandlerDeps } from './ui-server.js';
import { createHostGuard } from '../http/host-guard.js';
import { rawHttpRequest } from '../test-support/raw-http-request.js';

const CONFIG_YAML = `
edge: { id: edge-test }
refresh: { admin_token: "" }
openai: { model_routes: [{ model: routed, adapter: cli, target: fake }] }
models:
  - { id: m1, display_name: "Model one", providers: { p1: served-1 } }
nodes:
  - id: n1
    token: "node-secret-token"
    adapters:
      cli: { profiles: { fake: { command: "fake" } } }
      ollama: { base_url: "http://127.0.0.1:11434" }
    providers:
      - { id: p1, type: ollama, category: local_inference, adapter: ollama, models: [served-1], capacity: 2 }
`;

function loadConfig(): EdgeConfig {
  const result = parseConfigText(CONFIG_YAML, 'test.yaml');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const node: NodeSummary = {
  nodeId: 'n1',
  alias: 'alpha',
  agentVersion: '0.1.0',
  os: 'linux',
  arch: 'x64',
  hostname: 'host-1',
  remoteAddress: '127.0.0.1:5000',
  connectedSinceUnixMs: 1000,
  lastHeartbeatUnixMs: 2000,
  adapters: ['cli', 'ollama'],
  providers: [{ providerId: 'p1', health: 'healthy', detail: 'ok', cause: '', checkedAtUnixMs: 1500 }],
  discovered: {
    backends: [
      {
        kind: 'ollama',
        baseUrl: 'http://127.0.0.1:11434',
        models: ['a', 'b'],
        version: '0.12.6',
        loadedModels: ['a'],
      },
    ],
    clis: [{ name: 'codex', path: '/usr/bin/codex', version: '0.50.0' }],
    host: {
      os: 'linux',
      arch: 'x64',
      cpuCores: 16,
      memoryBytes: 64 * 2 ** 30,
      gpus: [{ name: 'RTX', memoryBytes: 24 * 2 ** 30, vendor: 'nvidia' }],
      agentsSeparateUser: false,
      agentUser: '',
      agentWorkspaceRoot: '',
    },
    discoveredAtUnixMs: 1700,
  },
};

const provider: UiProvider = {
  provider_id: 'p1',
  node_id: 'n1',
  status: 'ready',
  health: 'healthy',
  health_detail: 'ok',
  health_cause: '',
  capacity: 2,
  in_flight: 1,
  queued: 3,
  priority: 0,
  served_models: ['served-1'],
};

interface Harness {
  base: string;
  handler: UiHandler;
  commands: NodeCommandInput[];
  terminated: SessionRef[];
  refreshes: [string, string][];
  finished: string[];
  runLog: ReturnType<typeof createRunLog>;
}

const servers: http.Server[] = [];
const handlers: UiHandler[] = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) handler.close();
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function start(overrides: Partial<UiHandlerDeps> = {}): Promise<Harness> {
  const config = loadConfig();
  const commands: NodeCommandInput[] = [];
  const terminated: SessionRef[] = [];
  const refreshes: [string, string][] = [];
  const finished: string[] = [];
  const runLog = createRunLog();
  const sessionsResult: Record<string, string> = {
    sessions: '2',
    'session.0.mode': 'persistent',
    'session.0.target': 'fake',
    'session.0.session': 'default',
    'session.1.mode': 'oneshot',
    'session.1.target': 'fake',
    'session.1.session': 'other',
  };
  const handler = createUiHandler({
    edgeId: 'edge-test',
    version: '9.9.9',
    token: '',
    guard: createHostGuard({ listen: '127.0.0.1:0' }),
    service: {
      listNodes: () => [node],
      agentRuns: () => [
        {
          runId: 'run-agent',
          nodeId: 'n1',
          principal: 'key-a',
          model: 'coder',
          liveChildren: 1,
          children: 4,
          tokens: 20,
          childTokens: 900,
        },
      ],
      nodeCommand: (input) => {
        commands.push(input);
        return Promise.resolve<NodeCommandResponse>({
          ok: true,
          error: '',
          result: sessionsResult,
          lifecycle: undefined,
        });
      },
      terminateSession: (ref) => {
        terminated.push(ref);
        return Promise.resolve(ref.node ?? 'n1');
      },
    },
    providers: () => [provider],
    config: () => config,
    refresh: (mode, yaml): Promise<UiRefreshResult> => {
      refreshes.push([mode, yaml]);
      return Promise.resolve({
        status: 'applied',
        mode,
        changed_nodes: ['n1'],
        changed_providers: ['p1'],
        changed_models: [],
        reports: [
          { path: 'nodes[n1].providers[p1].capacity', change: 'modified', class: 'live', reason: 'r' },
        ],
        node_results: [],
      });
    },
    rejections: () => Promise.resolve(new Map([['m1', { r429: 4, r503: 1 }]])),
    playground: (request: PlaygroundRequest, signal: AbortSignal) => {
      const parts: RunEventPart[] = [
        { type: 'start', sessionId: 's', adapter: 'ollama', target: 'served-1' },
        { type: 'text-delta', text: `you said ${request.prompt}` },
        { type: 'usage', usage: { ...create.usage({}), promptTokens: 3, completionTokens: 4 } },
        { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
      ];
      return Promise.resolve({
        runId: 'run-pg',
        providerId: 'p1',
        nodeId: 'n1',
        queueMs: 7,
        parts: (async function* () {
          for (const part of parts) {
            await Promise.resolve();
            if (signal.aborted) return;
            yield part;
          }
        })(),
        finish: (reason: string) => finished.push(reason),
      });
    },
    nodeLabel: () => 'node0',
    departures: () => [{ node_id: 'n9', alias: 'gone', reason: 'heartbeat-timeout', at_ms: 500 }],
    runLog,
    charts: createChartSeries({ clock: { ...systemClock, now: () => 10_000 } }),
    assets: new Map([
      ['/index.html', { contentType: 'text/html; charset=utf-8', body: Buffer.from('<html>app</html>') }],
      ['/assets/app-1.js', { contentType: 'text/javascript', body: Buffer.from('console.log(1)') }],
    ]),
    clock: { ...systemClock, now: () => 10_000 },
    logger: silentLogger,
    limits: { overviewIntervalMs: 20, maxStreams: 2, maxPlaygrounds: 1, maxBodyBytes: 4096 },
    ...overrides,
  });
  handlers.push(handler);
  const server = http.createServer(handler.handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { base: `http://127.0.0.1:${port}`, handler, commands, terminated, refreshes, finished, runLog };
}

function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Reads SSE events from a response until `until` returns true (bounded by the test timeout). */
async function readEvents(
  response: Response,
  until: (events: { event: string; data: unknown }[]) => boolean,
): Promise<{ event: string; data: unknown }[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: { event: string; data: unknown }[] = [];
  let buffer = '';
  try {
    while (!until(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf('\n\n');
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data !== undefined) events.push({ event, data: JSON.parse(data) as unknown });
      }
    }
  } finally {
    await reader.cancel();
  }
  return events;
}

describe('ui handler: static app', () => {
  it('serves the app for / and client routes, assets with long caching, and 404 for a missing file', async () => {
    const { base } = await start();
    const index = await fetch(`${base}/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toBe('<html>app</html>');
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    expect((await fetch(`${base}/runs`)).status).toBe(200);
    const asset = await fetch(`${base}/assets/app-1.js`);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${base}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${base}/`, { method: 'DELETE' })).status).toBe(405);
  });
});

describe('ui handler: Keys view', () => {
  const row = (group: string, tokens: number): UsageRow => ({
    group,
    runs: 2,
    childRuns: 1,
    inputTokens: tokens,
    outputTokens: 5,
    outcomes: { completed: 2, error: 0, cancelled: 0, rejected: 0 },
    queueMsTotal: 0,
    durationMsTotal: 10,
    lastAtMs: 9_000,
  });

  it('answers only a caller with the admin token or a login, like every view, with the recorded usage', async () => {
    const queries: UsageQuery[] = [];
    const { base } = await start({
      token: 'admin-secret',
      usage: (query) => {
        queries.push(query);
        return [row('team-a', 40)];
      },
    });
    expect((await fetch(`${base}/api/v1/keys`)).status).toBe(401);
    expect((await fetch(`${base}/api/v1/keys`, { headers: { authorization: 'Bearer nope' } })).status).toBe(
      401,
    );
    const login = await postJson(`${base}/api/v1/login`, { token: 'admin-secret' });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const answer = await fetch(`${base}/api/v1/keys?since=1h`, { headers: { cookie } });
    expect(answer.status).toBe(200);
    const view = (await answer.json()) as UiKeys;
    // 10 s after the epoch less an hour is clamped to 0.
    expect(view.since_ms).toBe(0);
    expect(view.keys).toEqual([
      expect.objectContaining({ id: 'team-a', configured: false, runs: 2, child_runs: 1, input_tokens: 40 }),
    ]);
    expect(queries).toEqual([{ by: 'key', sinceMs: 0 }]);
    const bad = await fetch(`${base}/api/v1/keys?since=soon`, {
      headers: { authorization: 'Bearer admin-secret' },
    });
    expect(bad.status).toBe(400);
  });

  it('answers 503 usage_disabled when the edge records no usage', async () => {
    const { base } = await start();
    const answer = await fetch(`${base}/api/v1/keys`);
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({ error: { code: 'usage_disabled', message: expect.any(String) } });
  });
});

describe('ui handler: authentication', () => {
  it('asks for the admin token on every API call and accepts a bearer header or the login cookie', async () => {
    const { base } = await start({ token: 'admin-secret' });
    const denied = await fetch(`${base}/api/v1/overview`);
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    expect(
      (await fetch(`${base}/api/v1/overview`, { headers: { authorization: 'Bearer nope' } })).status,
    ).toBe(401);
    expect(
      (await fetch(`${base}/api/v1/overview`, { headers: { authorization: 'Bearer admin-secret' } })).status,
    ).toBe(200);
    expect(await (await fetch(`${base}/api/v1/login`)).json()).toEqual({ token_required: true });
    expect((await postJson(`${base}/api/v1/login`, { token: 'wrong' })).status).toBe(401);
    const login = await postJson(`${base}/api/v1/login`, { token: 'admin-secret' });
    expect(login.status).toBe(200);
    expect(await login.json()).toEqual({
      authenticated: true,
      token_required: true,
      expires_at_ms: 10_000 + 12 * 3600_000,
    });
    const cookie = login.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      /^iop_ui_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/,
    );
    expect(cookie).not.toContain('admin-secret');
    const withCookie = await fetch(`${base}/api/v1/runs`, { headers: { cookie: cookie.split(';')[0] } });
    expect(withCookie.status).toBe(200);
    // The raw token as a cookie is not a session.
    const rawToken = await fetch(`${base}/api/v1/runs`, {
      headers: { cookie: 'iop_ui_session=admin-secret' },
    });
    expect(rawToken.status).toBe(401);
    // The static app itself needs no token: it holds no data.
    expect((await fetch(`${base}/`)).status).toBe(200);
  });

  it('logs out: the session id stops working and the cookie is cleared', async () => {
    const { base, handler } = await start({ token: 'admin-secret' });
    const login = await postJson(`${base}/api/v1/login`, { token: 'admin-secret' });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(handler.logins).toBe(1);
    const logout = await postJson(`${base}/api/v1/logout`, {}, { cookie });
    expect(logout.status).toBe(200);
    expect(logout.headers.get('set-cookie')).toMatch(/^iop_ui_session=; Path=\/; Max-Age=0; HttpOnly/);
    expect(handler.logins).toBe(0);
    expect((await fetch(`${base}/api/v1/overview`, { headers: { cookie } })).status).toBe(401);
  });

  it('ends a login at its expiry and keeps at most maxLogins', async () => {
    let now = 10_000;
    const clock = { ...systemClock, now: () => now };
    const { base, handler } = await start({
      token: 'admin-secret',
      clock,
      loginLimits: { ttlMs: 60_000, maxLogins: 3 },
    });
    const cookies: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      const login = await postJson(`${base}/api/v1/login`, { token: 'admin-secret' });
      cookies.push((login.headers.get('set-cookie') ?? '').split(';')[0] ?? '');
    }
    expect(new Set(cookies).size).toBe(4);
    expect(handler.logins).toBe(3);
    // The oldest made room for the fourth.
    expect((await fetch(`${base}/api/v1/runs`, { headers: { cookie: cookies[0] ?? '' } })).status).toBe(401);
    expect((await fetch(`${base}/api/v1/runs`, { headers: { cookie: cookies[3] ?? '' } })).status).toBe(200);
    now += 60_000;
    expect((await fetch(`${base}/api/v1/runs`, { headers: { cookie: cookies[3] ?? '' } })).status).toBe(401);
  });

  it('throttles failed logins per address with 429 and Retry-After, a correct token included', async () => {
    let now = 10_000;
    const clock = { ...systemClock, now: () => now };
    const { base } = await start({
      token: 'admin-secret',
      clock,
      loginThrottle: { perAddress: 3, global: 100, windowMs: 60_000 },
    });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await postJson(`${base}/api/v1/login`, { token: `guess-${attempt}` })).status).toBe(401);
    }
    const throttled = await postJson(`${base}/api/v1/login`, { token: 'admin-secret' });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('60');
    expect(await throttled.json()).toEqual({
      error: { code: 'too_many_attempts', message: 'too many failed logins; try again in 60 s' },
    });
    now += 30_000;
    expect(
      (await postJson(`${base}/api/v1/login`, { token: 'admin-secret' })).headers.get('retry-after'),
    ).toBe('30');
    now += 30_000;
    expect((await postJson(`${base}/api/v1/login`, { token: 'admin-secret' })).status).toBe(200);
  });

  it('says no token is required and signs anyone in without a session when none is configured', async () => {
    const { base, handler } = await start();
    expect(await (await fetch(`${base}/api/v1/login`)).json()).toEqual({ token_required: false });
    const login = await postJson(`${base}/api/v1/login`, {});
    expect(await login.json()).toEqual({ authenticated: true, token_required: false });
    expect(login.headers.get('set-cookie')).toBeNull();
    expect(handler.logins).toBe(0);
  });

  it('refuses a login that is not JSON (a cross-site form cannot sign in)', async () => {
    const { base } = await start({ token: 'admin-secret' });
    const form = await fetch(`${base}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=admin-secret',
    });
    expect(form.status).toBe(415);
  });
});

describe('ui handler: Host and Origin (DNS rebinding)', () => {
  it('refuses a foreign Host with 421 before anything runs, and serves its own addresses', async () => {
    const { base, refreshes } = await start();
    const port = Number(new URL(base).port);
    const rebound = await rawHttpRequest(
      port,
      'POST',
      '/api/v1/config/refresh',
      {
        host: `rebind.evil.example:${port}`,
        origin: `http://rebind.evil.example:${port}`,
        'content-type': 'application/json',
      },
      JSON.stringify({ mode: 'apply', config_yaml: 'models: []' }),
    );
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: { code: 'host_not_allowed' } });
    expect(refreshes).toEqual([]);
    const asset = await rawHttpRequest(port, 'GET', '/', { host: `rebind.evil.example:${port}` });
    expect(asset.status).toBe(421);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      expect((await rawHttpRequest(port, 'GET', '/api/v1/overview', { host })).status).toBe(200);
    }
    // The right name on another port is not this listener either.
    expect((await rawHttpRequest(port, 'GET', '/api/v1/overview', { host: '127.0.0.1:1' })).status).toBe(421);
  });

  it('compares Origin with the listener, not with the Host the page sent', async () => {
    const { base, refreshes } = await start();
    const port = Number(new URL(base).port);
    const foreign = await rawHttpRequest(
      port,
      'POST',
      '/api/v1/config/refresh',
      {
        host: `127.0.0.1:${port}`,
        origin: 'http://evil.example',
        'content-type': 'application/json',
      },
      JSON.stringify({ mode: 'apply', config_yaml: 'x' }),
    );
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: { code: 'origin_not_allowed' } });
    const opaque = await rawHttpRequest(
      port,
      'POST',
      '/api/v1/config/refresh',
      {
        host: `127.0.0.1:${port}`,
        origin: 'null',
        'content-type': 'application/json',
      },
      JSON.stringify({ mode: 'apply', config_yaml: 'x' }),
    );
    expect(opaque.status).toBe(403);
    expect(refreshes).toEqual([]);
  });
});

describe('ui handler: read-only views', () => {
  it("shows a provider's open circuit in the fleet view over the node's healthy probe", async () => {
    const { base } = await start({ providers: () => [{ ...provider, health: 'open' }] });
    const overview = (await (await fetch(`${base}/api/v1/overview`)).json()) as {
      nodes: { providers: { provider_id: string; health: string; detail: string }[] }[];
      providers: { provider_id: string; health: string }[];
    };
    expect(overview.nodes[0]?.providers).toMatchObject([{ provider_id: 'p1', health: 'open', detail: 'ok' }]);
    expect(overview.providers).toMatchObject([{ provider_id: 'p1', health: 'open' }]);
  });

  it('answers the overview: nodes, departures, providers, models with queue and 429/503, routes, totals', async () => {
    const { base } = await start();
    const overview = (await (await fetch(`${base}/api/v1/overview`)).json()) as Record<string, unknown>;
    expect(overview).toMatchObject({
      edge_id: 'edge-test',
      version: '9.9.9',
      now_ms: 10_000,
      nodes: [
        {
          node_id: 'n1',
          alias: 'alpha',
          label: 'node0',
          os: 'linux',
          arch: 'x64',
          agent_version: '0.1.0',
          connected_since_ms: 1000,
          last_heartbeat_ms: 2000,
          adapters: ['cli', 'ollama'],
          providers: [{ provider_id: 'p1', health: 'healthy', detail: 'ok', checked_at_ms: 1500 }],
          discovered: {
            backends: [
              {
                kind: 'ollama',
                base_url: 'http://127.0.0.1:11434',
                models: ['a', 'b'],
                loaded_models: ['a'],
                version: '0.12.6',
              },
            ],
            clis: [{ name: 'codex', path: '/usr/bin/codex', version: '0.50.0' }],
            host: {
              cpu_cores: 16,
              memory_bytes: 64 * 2 ** 30,
              gpus: [{ name: 'RTX', vendor: 'nvidia', memory_bytes: 24 * 2 ** 30 }],
            },
            discovered_at_ms: 1700,
          },
        },
      ],
      departures: [{ node_id: 'n9', reason: 'heartbeat-timeout' }],
      providers: [provider],
      models: [
        {
          id: 'm1',
          display_name: 'Model one',
          providers: { p1: 'served-1' },
          queued: 3,
          rejected_429: 4,
          rejected_503: 1,
        },
      ],
      routes: [{ model: 'routed', node: '', adapter: 'cli', target: 'fake' }],
      fallback: { adapter: '', target: '', models: [] },
      totals: { in_flight: 1, queued: 3, runs_running: 0 },
      // Agent runs with their model calls (child runs) so far.
      agent_runs: [
        {
          run_id: 'run-agent',
          node_id: 'n1',
          principal: 'key-a',
          model: 'coder',
          live_children: 1,
          children: 4,
          tokens: 20,
          child_tokens: 900,
        },
      ],
    });
  });

  it('lists recent runs with filters and opens one into its timeline and text', async () => {
    const { base, runLog } = await start();
    runLog.record({
      runId: 'r1',
      nodeId: 'n1',
      seq: 0,
      atUnixMs: 1,
      part: { type: 'start', sessionId: 's', adapter: 'cli', target: 'fake' },
    });
    runLog.record({
      runId: 'r1',
      nodeId: 'n1',
      seq: 1,
      atUnixMs: 2,
      part: { type: 'text-delta', text: 'hi' },
    });
    const runs = (await (await fetch(`${base}/api/v1/runs?status=running`)).json()) as { runs: unknown[] };
    expect(runs.runs).toEqual([expect.objectContaining({ run_id: 'r1', status: 'running' })]);
    const none = (await (await fetch(`${base}/api/v1/runs?status=completed`)).json()) as { runs: unknown[] };
    expect(none.runs).toEqual([]);
    expect((await fetch(`${base}/api/v1/runs?limit=0`)).status).toBe(400);
    const detail = (await (await fetch(`${base}/api/v1/runs/r1`)).json()) as Record<string, unknown>;
    expect(detail).toMatchObject({
      text: 'hi',
      events: [{ type: 'start' }, { type: 'text-delta', summary: 'hi' }],
    });
    expect((await fetch(`${base}/api/v1/runs/nope`)).status).toBe(404);
  });

  it('shows the effective config with its secrets redacted', async () => {
    const { base } = await start();
    const text = await (await fetch(`${base}/api/v1/config`)).text();
    expect(text).not.toContain('node-secret-token');
    expect(text).toContain('[redacted]');
    expect(JSON.parse(text)).toMatchObject({ config: { edge: { id: 'edge-test' } } });
  });

  it('lists CLI sessions per node and CLI adapter from the nodes', async () => {
    const { base, commands } = await start();
    const answer = (await (await fetch(`${base}/api/v1/sessions`)).json()) as Record<string, unknown>;
    expect(answer).toEqual({
      sessions: [
        {
          node_id: 'n1',
          adapter: 'cli',
          error: '',
          sessions: [
            { session_id: 'default', target: 'fake', mode: 'persistent' },
            { session_id: 'other', target: 'fake', mode: 'oneshot' },
          ],
        },
      ],
    });
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatchObject({ node: 'n1', request: { command: 'sessions', adapter: 'cli' } });
  });

  it('reports a node that cannot list its sessions in that row', async () => {
    const { base } = await start({
      service: {
        listNodes: () => [node],
        agentRuns: () => [],
        nodeCommand: () => Promise.reject(new Error('node went away')),
        terminateSession: () => Promise.resolve('n1'),
      },
    });
    const answer = (await (await fetch(`${base}/api/v1/sessions`)).json()) as {
      sessions: { error: string }[];
    };
    expect(answer.sessions[0]?.error).toBe('node went away');
  });
});

describe('ui handler: actions', () => {
  it('terminates a session through the service, checking its fields', async () => {
    const { base, terminated } = await start();
    const bad = await postJson(`${base}/api/v1/sessions/terminate`, { node_id: 'n1' });
    expect(bad.status).toBe(400);
    const ok = await postJson(`${base}/api/v1/sessions/terminate`, {
      node_id: 'n1',
      adapter: 'cli',
      target: 'fake',
      session_id: 'default',
    });
    expect(await ok.json()).toEqual({ terminated: true, node_id: 'n1' });
    expect(terminated).toEqual([{ node: 'n1', adapter: 'cli', target: 'fake', sessionId: 'default' }]);
  });

  it('maps a typed error of the service to its status and code', async () => {
    const missing = Object.assign(new Error('no session default'), {
      code: 'node_not_found',
      fault: 'caller',
    });
    const { base } = await start({
      service: {
        listNodes: () => [node],
        agentRuns: () => [],
        nodeCommand: () => Promise.reject(missing),
        terminateSession: () => Promise.reject(missing),
      },
    });
    const answer = await postJson(`${base}/api/v1/sessions/terminate`, {
      node_id: 'n1',
      adapter: 'cli',
      session_id: 'default',
    });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ error: { code: 'node_not_found', message: 'no session default' } });
  });

  it('dry-runs and applies a candidate through the refresh function, JSON from this origin only', async () => {
    const { base, refreshes } = await start();
    const form = await fetch(`${base}/api/v1/config/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'mode=apply',
    });
    expect(form.status).toBe(415);
    const foreign = await postJson(
      `${base}/api/v1/config/refresh`,
      { mode: 'apply', config_yaml: 'x' },
      { origin: 'http://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect((await postJson(`${base}/api/v1/config/refresh`, { mode: 'dry-run' })).status).toBe(400);
    const host = new URL(base).host;
    const result = await postJson(
      `${base}/api/v1/config/refresh`,
      { mode: 'dry-run', config_yaml: 'models: []' },
      { origin: `http://${host}` },
    );
    expect(result.status).toBe(200);
    expect(await result.json()).toMatchObject({
      status: 'applied',
      mode: 'dry-run',
      changed_providers: ['p1'],
    });
    expect(refreshes).toEqual([['dry-run', 'models: []']]);
  });

  it('answers 503 when config refresh is disabled and 413 for a body over the limit', async () => {
    const { base } = await start({ refresh: undefined });
    expect(
      (await postJson(`${base}/api/v1/config/refresh`, { mode: 'apply', config_yaml: 'x' })).status,
    ).toBe(503);
    const large = await postJson(`${base}/api/v1/sessions/terminate`, { node_id: 'x'.repeat(5000) });
    expect(large.status).toBe(413);
  });

  it('rejects invalid JSON with 400', async () => {
    const { base } = await start();
    const answer = await fetch(`${base}/api/v1/sessions/terminate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });
});

describe('ui handler: live feed', () => {
  it('pushes the overview, charts and run updates, caps open feeds and releases each once', async () => {
    const { base, handler, runLog } = await start();
    const first = await fetch(`${base}/api/v1/stream`);
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    const second = await fetch(`${base}/api/v1/stream`);
    await waitFor(() => handler.openStreams === 2);
    const third = await fetch(`${base}/api/v1/stream`);
    expect(third.status).toBe(503);
    setTimeout(
      () =>
        runLog.record({
          runId: 'live-1',
          nodeId: 'n1',
          seq: 0,
          atUnixMs: 5,
          part: { type: 'start', sessionId: 's', adapter: 'cli', target: 'fake' },
        }),
      30,
    );
    const events = await readEvents(
      first,
      (seen) =>
        seen.some((event) => event.event === 'run') && seen.filter((e) => e.event === 'overview').length >= 2,
    );
    expect(events.find((event) => event.event === 'overview')?.data).toMatchObject({ edge_id: 'edge-test' });
    expect(events.find((event) => event.event === 'charts')?.data).toMatchObject({ bucket_ms: 10_000 });
    expect(events.find((event) => event.event === 'run')?.data).toMatchObject({ run_id: 'live-1' });
    await waitFor(() => handler.openStreams === 1);
    handler.close();
    await waitFor(() => handler.openStreams === 0);
    await second.body?.cancel();
    expect((await fetch(`${base}/api/v1/overview`)).status).toBe(503);
  });
});

describe('ui handler: live feed sharing', () => {
  it('computes the overview once per half interval for every open feed', async () => {
    let now = 50_000;
    let computed = 0;
    const { base } = await start({
      clock: { ...systemClock, now: () => now },
      providers: () => {
        computed += 1;
        return [provider];
      },
    });
    const first = await fetch(`${base}/api/v1/stream`);
    const second = await fetch(`${base}/api/v1/stream`);
    const overviews = (events: { event: string }[]) =>
      events.filter((event) => event.event === 'overview').length;
    await Promise.all([
      readEvents(first, (seen) => overviews(seen) >= 3),
      readEvents(second, (seen) => overviews(seen) >= 3),
    ]);
    // The clock did not move: six overview frames, one computation.
    expect(computed).toBe(1);
    now += 1000;
    const third = await fetch(`${base}/api/v1/stream`);
    await readEvents(third, (seen) => overviews(seen) >= 1);
    expect(computed).toBe(2);
  });
});

describe('ui handler: playground', () => {
  it('streams the answer with its provider and timings and finishes the run once', async () => {
    const { base, finished, runLog, handler } = await start();
    const response = await postJson(`${base}/api/v1/playground`, { model: 'm1', prompt: 'ping' });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = await readEvents(response, () => false);
    expect(events).toEqual([
      { event: 'meta', data: { run_id: 'run-pg', model: 'm1', provider: 'p1', node_id: 'n1', queue_ms: 7 } },
      { event: 'delta', data: { text: 'you said ping' } },
      {
        event: 'done',
        data: {
          status: 'completed',
          error: '',
          duration_ms: 0,
          overhead_ms: 0,
          prompt_tokens: 3,
          completion_tokens: 4,
        },
      },
    ]);
    expect(finished).toHaveLength(1);
    expect(handler.openPlaygrounds).toBe(0);
    expect(runLog.get('run-pg')?.run).toMatchObject({
      surface: 'ui',
      model: 'm1',
      provider: 'p1',
      queue_ms: 7,
    });
  });

  it('checks the request and maps a refusal of the admission to its status before streaming', async () => {
    const full = Object.assign(new Error('queue full'), { code: 'queue_full', fault: 'transient' });
    const { base } = await start({ playground: () => Promise.reject(full) });
    expect((await postJson(`${base}/api/v1/playground`, { model: 'm1' })).status).toBe(400);
    expect(
      (await postJson(`${base}/api/v1/playground`, { model: 'm1', prompt: 'x', max_tokens: 0 })).status,
    ).toBe(400);
    const refused = await postJson(`${base}/api/v1/playground`, { model: 'm1', prompt: 'x' });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: { code: 'queue_full', message: 'queue full' } });
  });

  it('caps concurrent playground runs', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { base, handler } = await start({
      playground: () =>
        Promise.resolve({
          runId: 'slow',
          providerId: 'p1',
          nodeId: 'n1',
          queueMs: 0,
          parts: (async function* (): AsyncIterable<RunEventPart> {
            await gate;
            yield { type: 'complete', detail: '', finishReason: 'stop', backendMs: 0 };
          })(),
          finish: () => undefined,
        }),
    });
    const first = postJson(`${base}/api/v1/playground`, { model: 'm1', prompt: 'a' });
    await waitFor(() => handler.openPlaygrounds === 1);
    const second = await postJson(`${base}/api/v1/playground`, { model: 'm1', prompt: 'b' });
    expect(second.status).toBe(429);
    release();
    await (await first).text();
    await waitFor(() => handler.openPlaygrounds === 0);
  });
});

describe('UiError', () => {
  it('keeps the code of a typed error and picks the status from its fault', () => {
    expect(UiError.from(Object.assign(new Error('x'), { code: 'no_nodes', fault: 'transient' })).status).toBe(
      503,
    );
    expect(UiError.from(Object.assign(new Error('x'), { code: 'bad', fault: 'caller' })).status).toBe(400);
    expect(UiError.from(new Error('plain')).code).toBe('internal');
  });
});

async function waitFor(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
