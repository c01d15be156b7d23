// Starts the OpenAI-compatible surface on `openai.listen` (a SurfaceFactory for the edge runtime). Returns
// undefined when `openai.enabled` is false. The provider pool is the runtime's shared one (pool/shared-pool.ts).
// close() stops accepting, drops idle keep-alive connections and, after a short grace, cuts streams still open —
// their runs are cancelled and their leases returned by the normal client-disconnect path.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EdgeConfig } from '@iop/config';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { Clock } from '../pool/clock.js';
import { sharedProviderPool } from '../pool/shared-pool.js';
import type { ProviderPool } from '../pool/provider-pool.js';
import type { EdgeService } from '../service/types.js';
import { createHttpServer } from '../http/http-server.js';
import { localUrl, parseListenAddress } from '../net/listen-address.js';
import { EdgeMetrics } from '../metrics/edge-metrics.js';
import { EDGE_METRICS_KEY } from '../metrics/metrics-surface.js';
import { closeOpenAIApp, createOpenAIApp } from './openai-app.js';
import { edgeMetricsRecorder, type OpenAIMetrics } from './openai-metrics.js';

export interface OpenAISurfaceContext {
  config: EdgeConfig;
  service: EdgeService;
  events?: EventBus;
  logger: Logger;
  extras: Map<string, unknown>;
}

export interface OpenAISurface {
  name: string;
  /** Base URL, e.g. http://127.0.0.1:18081 */
  address: string;
  pool: ProviderPool;
  close(): Promise<void>;
}

export interface OpenAISurfaceOptions {
  clock?: Clock;
  /** Defaults to the runtime's shared EdgeMetrics (extras), when the metrics surface created one. */
  metrics?: OpenAIMetrics;
  /** How long open streams may finish after close() before they are cut. Default 2 s. */
  closeGraceMs?: number;
}

export async function createOpenAISurface(
  context: OpenAISurfaceContext,
  options: OpenAISurfaceOptions = {},
): Promise<OpenAISurface | undefined> {
  const openai = context.config.openai;
  if (!openai.enabled) return undefined;
  const logger = context.logger.child({ surface: 'openai' });
  const pool = sharedProviderPool({ ...context, logger, clock: options.clock });
  const shared = context.extras.get(EDGE_METRICS_KEY);
  const metrics =
    options.metrics ?? (shared instanceof EdgeMetrics ? edgeMetricsRecorder(shared) : undefined);
  const app = createOpenAIApp({
    config: context.config,
    service: context.service,
    pool,
    logger,
    clock: options.clock,
    metrics,
  });
  const { host, port } = parseListenAddress(openai.listen);
  const server = createHttpServer(app);
  await listen(server, host, port);
  const bound = server.address() as AddressInfo;
  const address = localUrl(bound.address, bound.port);
  logger.info({ address, api_keys: openai.api_keys.length }, 'openai-compatible API listening');
  let closing: Promise<void> | undefined;
  return {
    name: 'openai',
    address,
    pool,
    close() {
      closing ??= new Promise<void>((resolve) => {
        closeOpenAIApp(app);
        const grace = setTimeout(() => server.closeAllConnections(), options.closeGraceMs ?? 2000);
        grace.unref();
        server.close(() => {
          clearTimeout(grace);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
