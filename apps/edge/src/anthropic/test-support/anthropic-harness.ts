// Test support: the Anthropic routes alone, served on 127.0.0.1:0 the way the OpenAI listener offers them each
// request first (a request they do not take gets the harness's 404 `not_mounted`), over a FakeEdgeService and a
// real provider pool (the listener's shared test fabric, surface-kit/test-support), with an official
// `@anthropic-ai/sdk` client pointed at it. The client's fetch keeps every response body's raw text, so tests can
// check the SSE events the SDK itself hides (`ping`). The mount on the real listener: openai-listener.test.ts.
import Anthropic from '@anthropic-ai/sdk';
import type { EdgeConfig } from '@iop/config';
import { silentLogger } from '../../logging.js';
import type { ProviderPool } from '../../pool/provider-pool.js';
import type { HttpMount } from '../../http/http-mount.js';
import {
  harnessFabric,
  serveListener,
  type HarnessOptions,
  type ServedListener,
} from '../../surface-kit/test-support/surface-harness.js';
import type { SurfaceMetrics } from '../../surface-kit/surface-metrics.js';
import type { FakeEdgeService } from '../../test-support/fake-edge-service.js';
import { createAnthropicRoutes } from '../anthropic-routes.js';

export interface AnthropicHarness {
  url: string;
  client: Anthropic;
  service: FakeEdgeService;
  pool: ProviderPool;
  config: EdgeConfig;
  /** Raw bodies of the responses the client received, in order. */
  bodies: string[];
  /** Requests the metrics recorder saw: route, status. */
  finished: { route: string; status: number }[];
  close(): Promise<void>;
}

export async function startAnthropicHarness(
  options: HarnessOptions & { apiKey?: string } = {},
): Promise<AnthropicHarness> {
  const { config, pool, service } = harnessFabric(options);
  const finished: { route: string; status: number }[] = [];
  const metrics: SurfaceMetrics = {
    requestFinished: (route, status) => finished.push({ route, status }),
    firstToken: () => undefined,
    overhead: () => undefined,
  };
  const routes = createAnthropicRoutes({ config, service, logger: silentLogger, metrics });
  const { url, close } = await serveMount(routes, () => pool.close());
  const bodies: string[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const [forClient, forRecord] = response.body ? response.body.tee() : [null, null];
    if (forRecord) {
      void new Response(forRecord).text().then((text) => bodies.push(text));
    }
    return new Response(forClient, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  const client = new Anthropic({
    baseURL: url,
    apiKey: options.apiKey ?? 'test-key',
    maxRetries: 0,
    timeout: 10_000,
    fetch: recordingFetch,
  });
  return {
    url,
    client,
    service,
    pool,
    config,
    bodies,
    finished,
    close,
  };
}

/** The status and error code of a request the mount left to the listener's owner. */
export const NOT_MOUNTED = { status: 404, code: 'not_mounted' } as const;

/** Serves `mount` alone: what it does not take is answered 404 `not_mounted`. */
export function serveMount(mount: HttpMount, onClose: () => void): Promise<ServedListener> {
  return serveListener((request, response) => {
    if (mount.handle(request, response)) return;
    response.writeHead(NOT_MOUNTED.status, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: NOT_MOUNTED.code } }));
  }, onClose);
}
