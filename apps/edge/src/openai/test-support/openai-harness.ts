// Test support: the OpenAI app on 127.0.0.1:0 over a FakeEdgeService and a real provider pool (the listener's
// shared test fabric, surface-kit/test-support), with an official `openai` client pointed at it.
import type { Server } from 'node:http';
import OpenAI from 'openai';
import type { EdgeConfig } from '@iop/config';
import { silentLogger } from '../../logging.js';
import type { ProviderPool } from '../../pool/provider-pool.js';
import type { FakeNodes } from '../../pool/test-support/pool-fixture.js';
import { closeOpenAIApp, createOpenAIApp, type OpenAIApp } from '../openai-app.js';
import type { FakeEdgeService } from '../../test-support/fake-edge-service.js';
import {
  harnessFabric,
  serveListener,
  type HarnessOptions,
  type ServedListener,
} from '../../surface-kit/test-support/surface-harness.js';

export interface Harness {
  url: string;
  client: OpenAI;
  service: FakeEdgeService;
  pool: ProviderPool;
  nodes: FakeNodes;
  config: EdgeConfig;
  server: Server;
  close(): Promise<void>;
}

/** Serves `app` on 127.0.0.1 at a port chosen now; closing closes the app, the pool and every connection. */
export function serveHarnessApp(app: OpenAIApp, pool: ProviderPool): Promise<ServedListener> {
  return serveListener(app, () => {
    closeOpenAIApp(app);
    pool.close();
  });
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { config, nodes, pool, service } = harnessFabric(options);
  const app = createOpenAIApp({ config, service, logger: silentLogger });
  const { server, url, close } = await serveHarnessApp(app, pool);
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'test-key', maxRetries: 0, timeout: 10_000 });
  return { url, client, service, pool, nodes, config, server, close };
}
