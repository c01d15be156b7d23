// Test support: the OpenAI listener's app with the Anthropic routes mounted, on 127.0.0.1:0, over a
// FakeEdgeService and a real provider pool (openai-harness's config), with an official `@anthropic-ai/sdk` client
// pointed at it. The client's fetch keeps every response body's raw text, so tests can check the SSE events the
// SDK itself hides (`ping`).
import Anthropic from '@anthropic-ai/sdk';
import type { EdgeConfig } from '@iop/config';
import { silentLogger } from '../../logging.js';
import type { ProviderPool } from '../../pool/provider-pool.js';
import { createOpenAIApp } from '../../openai/openai-app.js';
import {
  harnessFabric,
  serveHarnessApp,
  type HarnessOptions,
} from '../../openai/test-support/openai-harness.js';
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
  const app = createOpenAIApp({ config, service, logger: silentLogger, mounts: [routes] });
  const { url, close } = await serveHarnessApp(app, pool);
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
