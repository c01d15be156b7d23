// Starts the OpenAI-compatible surface on `openai.listen` (a SurfaceFactory for the edge runtime). Returns
// undefined when `openai.enabled` is false. Runs go through the service's admission path like every surface's.
// close() stops accepting, drops idle keep-alive connections and, after a short grace, cuts streams still open —
// their runs are cancelled and their leases returned by the normal client-disconnect path.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import type { Clock } from '../clock.js';
import type { EdgeService } from '../service/types.js';
import { createHttpServer } from '../http/http-server.js';
import { createHostGuard, guardRequests } from '../http/host-guard.js';
import { localUrl, parseListenAddress } from '../net/listen-address.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { Governance } from '../governance/governance.js';
import type { HttpMount } from '../http/http-mount.js';
import type { ModelCallEntry } from '../http/model-call-socket.js';
import type { ModelCallAuthenticator } from '../service/model-call-auth.js';
import { closeOpenAIApp, createOpenAIApp } from './openai-app.js';
import type { ResponseStore } from './response-store.js';
import { edgeMetricsRecorder, type SurfaceMetrics } from '../surface-kit/surface-metrics.js';

/** What the OpenAI surface uses of the runtime's core. */
export interface OpenAISurfaceDeps {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock: Clock;
  /** The runtime's metrics; none = not instrumented. */
  metrics?: EdgeMetrics;
  /** The API keys in force (live); none = `openai.api_keys` of `config`, fixed. */
  governance?: Pick<Governance, 'keys'>;
  /**
   * Agents' model calls (issue 42): the listener attaches its connection server to `modelCallEntry` (the node
   * links' relay hands it the calls) and authenticates them with `modelCallAuth`; none = no model calls.
   */
  modelCallEntry?: ModelCallEntry;
  modelCallAuth?: ModelCallAuthenticator;
  /** Stored responses (`<data_dir>/responses.db`); none = in memory (openai-app.ts). */
  responseStore?: ResponseStore;
}

export interface OpenAISurface {
  name: string;
  /** Base URL, e.g. http://127.0.0.1:18081 */
  address: string;
  close(): Promise<void>;
}

export interface OpenAISurfaceOptions {
  /** Overrides the recorder made from `deps.metrics` (tests). */
  metrics?: SurfaceMetrics;
  /** How long open streams may finish after close() before they are cut. Default 2 s. */
  closeGraceMs?: number;
  /** Routes of other APIs served on the same listener (the Anthropic Messages API), offered every request first. */
  mounts?: readonly HttpMount[];
}

export async function createOpenAISurface(
  context: OpenAISurfaceDeps,
  options: OpenAISurfaceOptions = {},
): Promise<OpenAISurface | undefined> {
  const openai = context.config.openai;
  if (!openai.enabled) return undefined;
  const logger = context.logger.child({ surface: 'openai' });
  const metrics =
    options.metrics ?? (context.metrics ? edgeMetricsRecorder(context.metrics, 'openai') : undefined);
  const app = createOpenAIApp({
    config: context.config,
    service: context.service,
    logger,
    clock: context.clock,
    metrics,
    ...(context.governance ? { principals: context.governance.keys.openai } : {}),
    ...(options.mounts ? { mounts: options.mounts } : {}),
    ...(context.modelCallAuth ? { modelCalls: context.modelCallAuth } : {}),
    ...(context.responseStore ? { responseStore: context.responseStore } : {}),
  });
  const { host, port } = parseListenAddress(openai.listen);
  // Host / Origin first: a rebinding page or a foreign origin is refused before body, auth or admission.
  const guard = createHostGuard({ listen: openai.listen, names: context.config.http.allowed_hosts });
  const server = createHttpServer(guardRequests(guard, app));
  await listen(server, host, port);
  // A model call is one more connection of this server: same parser, limits, guard and handlers.
  const detachModelCalls = context.modelCallEntry?.serveWith((socket) => server.emit('connection', socket));
  const bound = server.address() as AddressInfo;
  const address = localUrl(bound.address, bound.port);
  logger.info({ address, api_keys: openai.api_keys.length }, 'openai-compatible API listening');
  let closing: Promise<void> | undefined;
  return {
    name: 'openai',
    address,
    close() {
      closing ??= new Promise<void>((resolve) => {
        detachModelCalls?.();
        closeOpenAIApp(app);
        const grace = context.clock.setTimeout(
          () => server.closeAllConnections(),
          options.closeGraceMs ?? 2000,
        );
        server.close(() => {
          context.clock.clearTimeout(grace);
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
