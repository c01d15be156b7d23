// RunRequest.collect on the wire: the edge marks the runs whose answer it writes as one body (non-streaming chat
// completions and responses) so the node may fetch the whole answer from its backend at once; streamed and
// background runs stream as before.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { RunRequest } from '@iop/wire';
import { createEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import { ANSWERING_NODE_CONFIG, startAnsweringNode } from '../node/test-support/answering-node.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import { createEdgeService } from '../service/edge-service.js';
import { closeOpenAIApp, createOpenAIApp } from './openai-app.js';

const config = ANSWERING_NODE_CONFIG;

describe('RunRequest.collect from the OpenAI surface', () => {
  let server: Server;
  let pool: ProviderPool;
  let app: ReturnType<typeof createOpenAIApp>;
  let sent: RunRequest[];
  let url: string;

  beforeEach(async () => {
    const node = startAnsweringNode();
    const registry = node.registry;
    sent = node.requests;
    const events = createEventBus({ replaySize: 0, queueSize: 100 });
    pool = createProviderPool({ config, nodes: registry, events, pollIntervalMs: 20 });
    const service = createEdgeService({ registry, pool, events, logger: silentLogger });
    app = createOpenAIApp({ config, service, logger: silentLogger });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterEach(async () => {
    closeOpenAIApp(app);
    pool.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function post(path: string, body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-a', ...body }),
    });
    expect(response.status).toBe(200);
    return response.text();
  }

  async function waitForRuns(count: number): Promise<void> {
    for (let attempt = 0; attempt < 100 && sent.length < count; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
  }

  it('sets it for a non-streaming chat completion, not for a streamed one', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(await post('/chat/completions', { messages })).toContain('"ok"');
    expect(await post('/chat/completions', { messages, stream: true })).toContain('[DONE]');
    expect(sent.map((request) => request.collect)).toEqual([true, false]);
  });

  it('sets it for a non-streaming response, not for a streamed or a background one', async () => {
    await post('/responses', { input: 'hi' });
    await post('/responses', { input: 'hi', stream: true });
    // A background response is polled while it runs, possibly for long: it streams from the backend as before.
    await post('/responses', { input: 'hi', background: true });
    await waitForRuns(3);
    expect(sent.map((request) => request.collect)).toEqual([true, false, false]);
  });
});
