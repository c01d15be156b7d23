// The ops dashboard surface (`ui.enabled`, `ui.listen`): binds the dashboard's HTTP handler and feeds its
// in-memory state — the recent-runs ring and the one-hour chart ring from the event bus, node departures, the
// console's node labels — for as long as the edge runs.
//
// Security: like the admin API, without `refresh.admin_token` it only listens on loopback and refuses to start
// otherwise; with a token every API call needs it or a login (ui-server.ts). Every request passes the
// listener's Host / Origin guard first (http/host-guard.ts, names from `http.allowed_hosts`).
//
// Lifecycle: `startUiSurface(deps)` subscribes to the bus and binds the port; `close()` ends every live feed and
// playground stream, stops the sampler, unsubscribes and closes the listener (each exactly once).
import { systemClock, type Clock } from '../clock.js';
import { readFile } from 'node:fs/promises';
import type http from 'node:http';
import https from 'node:https';
import type { EdgeConfig } from '@iop/config';
import { create, isTerminalPart, type RunEventPart } from '@iop/wire';
import type { ClosableEventBus } from '../events/event-bus.js';
import type { Logger } from '../logging.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import { NodeLabels } from '../present/node-labels.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { EdgeService } from '../service/types.js';
import { DEFAULT_HTTP_SERVER_LIMITS } from '../http/http-server.js';
import { listenHttp, listenServer, type HttpListener } from '../http/listen-http.js';
import { createHostGuard } from '../http/host-guard.js';
import { isLoopbackHost, parseListenAddress } from '../net/listen-address.js';
import { EDGE_VERSION } from '../version.js';
import { createChartSeries, type ChartSeries } from './chart-series.js';
import { UiError } from './errors.js';
import { createRunLog, type RunLog } from './run-log.js';
import type { UiClusterEdge, UiDeparture, UiProvider, UiRefreshResult } from '@iop/ui-api';
import { loadEmbeddedAssets, type UiAssets } from './ui-assets.js';
import type { PlaygroundStarter } from './playground-route.js';
import { createUiHandler, type UiHandler, type UiLimits } from './ui-server.js';

/** What the dashboard reads or drives of the edge core. */
export interface UiCore {
  config: EdgeConfig;
  service: EdgeService;
  events: ClosableEventBus;
  logger: Logger;
  refresher: ConfigRefresher | undefined;
  metrics: EdgeMetrics;
}

export interface UiSurfaceOptions {
  /** The dashboard files; default: the ones embedded in this build (@iop/edge-ui). */
  assets?: UiAssets;
  limits?: Partial<UiLimits>;
  clock?: Clock;
  /** How often queue depth and in-flight are sampled into the charts. Default 1000 ms. */
  sampleIntervalMs?: number;
}

export interface UiSurface {
  readonly name: string;
  readonly address: string;
  close(): Promise<void>;
  readonly runLog: RunLog;
  readonly charts: ChartSeries;
  readonly handler: UiHandler;
}

const DEPARTURES_KEPT = 20;

/** The surface as `serve` starts it (`ui.enabled`). */
export function createUiSurface(options: UiSurfaceOptions = {}) {
  return async (core: UiCore): Promise<UiSurface | undefined> => {
    if (!core.config.ui.enabled) return undefined;
    return startUiSurface(core, { ...options, assets: options.assets ?? (await loadEmbeddedAssets()) });
  };
}

export async function startUiSurface(core: UiCore, options: UiSurfaceOptions = {}): Promise<UiSurface> {
  const logger = core.logger.child({ component: 'ui' });
  const { config, service } = core;
  const clock = options.clock ?? systemClock;
  const assets = options.assets ?? (await loadEmbeddedAssets());
  const listen = parseListenAddress(config.ui.listen, (message) => new UiError('invalid_request', message));
  const token = config.refresh.admin_token;
  if (!token && !isLoopbackHost(listen.host)) {
    throw new UiError(
      'insecure_listen',
      `refusing to serve the dashboard on non-loopback address ${config.ui.listen} without refresh.admin_token`,
    );
  }
  // Beyond loopback the token crosses the network: HTTPS with the edge's own certificate, never plaintext.
  let tls: { cert: Buffer; key: Buffer } | undefined;
  if (!isLoopbackHost(listen.host)) {
    if (!config.edge.tls.enabled) {
      throw new UiError(
        'insecure_listen',
        `refusing to send refresh.admin_token in clear on non-loopback address ${config.ui.listen}: enable edge.tls`,
      );
    }
    const [cert, key] = await Promise.all([
      readFile(config.edge.tls.cert_file),
      readFile(config.edge.tls.key_file),
    ]);
    tls = { cert, key };
  }
  const refresher = core.refresher;
  const currentConfig = (): EdgeConfig => refresher?.current() ?? config;
  const runLog = createRunLog({
    clock,
    resolveRoute: (node, adapter, target) => routeOf(currentConfig(), node, adapter, target),
  });
  const charts = createChartSeries({ clock });
  const labels = new NodeLabels();
  for (const node of [...service.listNodes()].sort(
    (a, b) => a.connectedSinceUnixMs - b.connectedSinceUnixMs,
  )) {
    labels.labelFor(node.nodeId);
  }
  const departures: UiDeparture[] = [];

  // Feed the run ring and departures from the bus (replay: runs that started just before the dashboard did).
  const subscription = core.events.subscribe({ replay: true });
  const following = (async () => {
    for await (const event of subscription) {
      if (event.type === 'run') {
        try {
          runLog.record(event.event);
        } catch (error) {
          // One malformed event must not stop the dashboard's feed.
          logger.warn({ run: event.event.runId, error: String(error) }, 'ui: run event not recorded');
        }
      } else if (event.event.kind === 'connected') labels.labelFor(event.event.nodeId);
      else if (event.event.kind === 'disconnected') {
        departures.unshift({
          node_id: event.event.nodeId,
          alias: event.event.alias,
          reason: event.event.reason,
          at_ms: event.event.atUnixMs,
        });
        departures.length = Math.min(departures.length, DEPARTURES_KEPT);
      }
    }
  })();
  const unobserve = runLog.onFinished((run) => {
    if (run.ended_ms !== null && run.duration_ms !== null) {
      charts.addRun(run.ended_ms, run.duration_ms, run.overhead_ms);
    }
  });
  const providers = (): UiProvider[] => {
    // The node's own report of each provider (detail and cause of its last probe), by node and provider id.
    const reported = new Map<string, { detail: string; cause: string }>();
    for (const node of service.listNodes()) {
      for (const entry of node.providers) reported.set(`${node.nodeId}\n${entry.providerId}`, entry);
    }
    return service.providers().map((provider) => {
      const report = reported.get(`${provider.nodeId}\n${provider.providerId}`);
      return {
        provider_id: provider.providerId,
        node_id: provider.nodeId,
        status: provider.status,
        health: provider.health,
        health_detail: report?.detail ?? '',
        health_cause: report?.cause ?? '',
        capacity: provider.capacity,
        in_flight: provider.inFlight,
        queued: provider.queued,
        priority: provider.priority,
        served_models: [...provider.servedModels],
        resident_models: [...(provider.residentModels ?? [])],
        resident_state: provider.residentState ?? 'unknown',
      };
    });
  };
  // Cluster mode: per-edge figures from the cluster-wide pool and where each node is connected.
  const clusterEdges = service.inFabric
    ? (): UiClusterEdge[] => {
        const edgeOf = new Map(service.fabricNodes().map((node) => [node.nodeId, node.edgeId ?? '']));
        const edges = new Map<string, UiClusterEdge>();
        const edge = (edgeId: string): UiClusterEdge => {
          let entry = edges.get(edgeId);
          if (!entry) {
            entry = { edge_id: edgeId, nodes: 0, capacity: 0, in_flight: 0, queued: 0 };
            edges.set(edgeId, entry);
          }
          return entry;
        };
        for (const edgeId of edgeOf.values()) edge(edgeId).nodes += 1;
        for (const provider of providers()) {
          const edgeId = edgeOf.get(provider.node_id);
          if (edgeId === undefined) continue;
          const entry = edge(edgeId);
          entry.capacity += provider.capacity;
          entry.in_flight += provider.in_flight;
          entry.queued += provider.queued;
        }
        return [...edges.values()].sort((a, b) => a.edge_id.localeCompare(b.edge_id));
      }
    : undefined;
  const sampler = setInterval(() => {
    const totals = service.admissionTotals();
    charts.sample(totals.queued, totals.inFlight);
  }, options.sampleIntervalMs ?? 1000);
  sampler.unref();

  const handler = createUiHandler({
    edgeId: config.edge.id,
    version: EDGE_VERSION,
    token,
    secure: tls !== undefined,
    guard: createHostGuard({
      listen: config.ui.listen,
      names: config.http.allowed_hosts,
      secure: tls !== undefined,
    }),
    service,
    providers,
    ...(clusterEdges ? { clusterEdges } : {}),
    config: currentConfig,
    refresh: refresher
      ? (mode, yaml): Promise<UiRefreshResult> => refresher.refresh(mode, yaml, '')
      : undefined,
    rejections: async () => {
      const samples = (await core.metrics.providerRejections.get()).values;
      return rejectionTable(
        samples.map((sample) => ({
          model: String(sample.labels.model ?? ''),
          reason: String(sample.labels.reason ?? ''),
          value: sample.value,
        })),
      );
    },
    playground: playgroundStarter(core),
    nodeLabel: (nodeId) => labels.labelFor(nodeId),
    departures: () => departures.map((entry) => ({ ...entry })),
    runLog,
    charts,
    assets,
    clock,
    logger,
    limits: options.limits,
  });

  const stopFeeds = async (): Promise<void> => {
    clearInterval(sampler);
    handler.close();
    unobserve();
    subscription.close();
    await following;
  };
  let listener;
  try {
    listener = tls
      ? await listenHttps(config.ui.listen, handler.handle, tls)
      : await listenHttp(config.ui.listen, handler.handle);
  } catch (error) {
    await stopFeeds();
    throw new UiError(
      'listen_failed',
      `cannot listen on ${config.ui.listen} for the dashboard: ${String(error)}`,
      {
        cause: error,
      },
    );
  }
  const bound = listener;
  logger.info(
    { address: bound.address, authentication: token ? 'bearer' : 'none', tls: tls !== undefined },
    'dashboard listening',
  );
  let closing: Promise<void> | undefined;
  return {
    name: 'ui',
    address: `${tls ? 'https' : 'http'}://${bound.address}/`,
    runLog,
    charts,
    handler,
    close() {
      closing ??= (async () => {
        await stopFeeds();
        await bound.close();
      })();
      return closing;
    },
  };
}

/** Provider and model of a run on (node, adapter instance, target) under `config`; '' where none matches. */
export function routeOf(
  config: EdgeConfig,
  nodeId: string,
  adapter: string,
  target: string,
): { provider: string; model: string } {
  const node = config.nodes.find((entry) => entry.id === nodeId);
  const provider = node?.providers.find(
    (entry) => entry.adapter === adapter && (entry.models.length === 0 || entry.models.includes(target)),
  );
  if (!provider) return { provider: '', model: '' };
  const model = config.models.find((entry) => entry.providers[provider.id] === target);
  return { provider: provider.id, model: model?.id ?? '' };
}

/** Pool rejections by model: queue full / queue timeout answer 429, no provider 503 (as the OpenAI API does). */
function rejectionTable(
  samples: { model: string; reason: string; value: number }[],
): Map<string, { r429: number; r503: number }> {
  const table = new Map<string, { r429: number; r503: number }>();
  for (const sample of samples) {
    const row = table.get(sample.model) ?? { r429: 0, r503: 0 };
    if (sample.reason === 'queue_full' || sample.reason === 'queue_timeout') row.r429 += sample.value;
    else row.r503 += sample.value;
    table.set(sample.model, row);
  }
  return table;
}

/**
 * Playground prompts go through the same admission as an OpenAI request for the model (surface 'ui'): the
 * service queues, places, runs and releases; a client that goes away cancels the run.
 */
function playgroundStarter(core: UiCore): PlaygroundStarter {
  return async (request, signal) => {
    const run = await core.service.submitRun(
      { kind: 'model', model: request.model },
      {
        session: { kind: 'slot', baseId: 'ui-playground' },
        messages: [create.chatMessage({ role: 'user', content: request.prompt })],
        params: request.maxTokens ? create.generationParams({ maxTokens: request.maxTokens }) : undefined,
        metadata: { surface: 'ui' },
      },
      { surface: 'ui', signal },
    );
    let settled = false;
    void run.done.then(() => (settled = true));
    return {
      runId: run.runId,
      providerId: run.providerId ?? '',
      nodeId: run.nodeId,
      queueMs: run.queueMs,
      parts: (async function* (): AsyncIterable<RunEventPart> {
        for await (const event of run.events) {
          yield event.part;
          if (isTerminalPart(event.part)) return;
        }
      })(),
      finish(reason) {
        if (!settled) void run.cancel(reason).catch(() => undefined);
      },
    };
  };
}

/** The dashboard over HTTPS (beyond loopback), with the request bounds every edge HTTP listener has. */
async function listenHttps(
  listen: string,
  handler: http.RequestListener,
  tls: { cert: Buffer; key: Buffer },
): Promise<HttpListener> {
  const { host, port } = parseListenAddress(listen);
  const limits = DEFAULT_HTTP_SERVER_LIMITS;
  const server = https.createServer(
    {
      cert: tls.cert,
      key: tls.key,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  return listenServer(server, host, port);
}
