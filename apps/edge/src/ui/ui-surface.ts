// The ops dashboard surface (`ui.enabled`, `ui.listen`): binds the dashboard's HTTP handler and feeds its
// in-memory state — the recent-runs ring and the one-hour chart ring from the event bus, node departures, the
// console's node labels — for as long as the edge runs.
//
// Security: like the admin API, without `refresh.admin_token` it only listens on loopback and refuses to start
// otherwise, and beyond loopback only over HTTPS (ui-listener.ts); with a token every API call needs it or a login
// (ui-auth.ts). Every request passes the listener's Host / Origin guard first (http/host-guard.ts, names from
// `http.allowed_hosts`).
//
// Lifecycle: `startUiSurface(deps)` subscribes to the bus and binds the port; `close()` ends every live feed and
// playground stream, stops the sampler, unsubscribes and closes the listener (each exactly once).
import { systemClock, type Clock, type ClockTimer } from '../clock.js';
import type { EdgeConfig } from '@iop/config';
import type { ClosableEventBus } from '../events/event-bus.js';
import type { Governance } from '../governance/governance.js';
import { recordedUsage } from '../governance/recorded-usage.js';
import type { UsageQuery, UsageRow } from '../governance/usage-store.js';
import type { Logger } from '../logging.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import { NodeLabels } from '../present/node-labels.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { EdgeService } from '../service/types.js';
import { createHostGuard } from '../http/host-guard.js';
import { EDGE_VERSION } from '../version.js';
import { createChartSeries, type ChartSeries } from './chart-series.js';
import { followEdgeEvents } from './edge-event-follower.js';
import { playgroundStarter } from './playground-starter.js';
import { clusterEdgeViews, providerViews, rejectionTable } from './pool-views.js';
import { createRunLog, type RunLog } from './run-log.js';
import type { UiRefreshResult } from '@iop/ui-api';
import { loadEmbeddedAssets, type UiAssets } from './ui-assets.js';
import { listenUi, planUiListener } from './ui-listener.js';
import { createUiHandler, type UiHandler, type UiLimits } from './ui-server.js';

/** What the dashboard reads or drives of the edge core. */
export interface UiCore {
  config: EdgeConfig;
  service: EdgeService;
  events: ClosableEventBus;
  logger: Logger;
  refresher: ConfigRefresher | undefined;
  metrics: EdgeMetrics;
  /** The keys' recorded usage and live limits (Keys view); none = the Keys view answers 503. */
  governance?: Pick<Governance, 'usage' | 'governor'>;
  /** Cluster mode only: usage of every live edge added up (what `iop-edge usage` shows there too). */
  clusterUsage?: (query: UsageQuery) => Promise<UsageRow[]>;
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
  const { token, tls } = await planUiListener(config);
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
  const follower = followEdgeEvents(core.events, runLog, labels, logger);
  const unobserve = runLog.onFinished((run) => {
    if (run.ended_ms !== null && run.duration_ms !== null) {
      charts.addRun(run.ended_ms, run.duration_ms, run.overhead_ms);
    }
  });
  const sampleIntervalMs = options.sampleIntervalMs ?? 1000;
  let sampler: ClockTimer | undefined;
  const sample = (): void => {
    const totals = service.admissionTotals();
    charts.sample(totals.queued, totals.inFlight);
    sampler = clock.setTimeout(sample, sampleIntervalMs);
  };
  sampler = clock.setTimeout(sample, sampleIntervalMs);

  const providers = () => providerViews(service);
  const governor = core.governance?.governor;
  const usage = recordedUsage(core);
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
    ...(service.inFabric ? { clusterEdges: () => clusterEdgeViews(service, providers()) } : {}),
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
    ...(usage ? { usage } : {}),
    ...(governor ? { liveLimits: () => governor.snapshot() } : {}),
    playground: playgroundStarter(service),
    nodeLabel: (nodeId) => labels.labelFor(nodeId),
    departures: () => follower.departures(),
    runLog,
    charts,
    assets,
    clock,
    logger,
    limits: options.limits,
  });

  const stopFeeds = async (): Promise<void> => {
    clock.clearTimeout(sampler);
    sampler = undefined;
    handler.close();
    unobserve();
    await follower.close();
  };
  let bound;
  try {
    bound = await listenUi(config.ui.listen, handler.handle, tls);
  } catch (error) {
    await stopFeeds();
    throw error;
  }
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
