// The A2A surface's request metrics, read back from a real EdgeMetrics registry: counts by route (card, JSON-RPC
// method) and status, request durations, and the time to the first artifact chunk of a stream.
import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import { EdgeMetrics } from '../metrics/edge-metrics.js';
import { edgeHttpMetrics } from '../metrics/http-metrics.js';
import { FakeEdgeService } from '../test-support/fake-edge-service.js';
import { startA2ASurface, type RunningA2ASurface } from './a2a-surface.js';
import { TEST_A2A_SETTINGS } from './test-support/a2a-settings.js';

let surface: RunningA2ASurface | undefined;

afterEach(async () => {
  await surface?.close();
  surface = undefined;
});

async function start(metrics: EdgeMetrics, service = new FakeEdgeService()): Promise<string> {
  surface = await startA2ASurface({
    listen: '127.0.0.1:0',
    path: '/a2a',
    bearerToken: 'a2a-secret',
    edgeId: 'edge-test',
    version: '0.1.0',
    settings: TEST_A2A_SETTINGS,
    service,
    logger: silentLogger,
    metrics: edgeHttpMetrics(metrics, 'a2a'),
  });
  return `http://${surface.address}`;
}

function rpcBody(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
}

const message = {
  kind: 'message',
  messageId: 'm-1',
  role: 'user',
  parts: [{ kind: 'text', text: 'hello' }],
};

async function post(baseUrl: string, body: string, token = 'a2a-secret'): Promise<Response> {
  return fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
}

async function sample(metrics: EdgeMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  const match = metric?.values.find((value) =>
    Object.entries(labels).every(([key, label]) => value.labels[key] === label),
  );
  return match?.value ?? 0;
}

/** The close listener that records runs after the client has the response: wait for it. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('metric not recorded within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('A2A surface metrics', () => {
  it('counts requests by route and status, with durations', async () => {
    const metrics = new EdgeMetrics();
    const baseUrl = await start(metrics);
    await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).arrayBuffer();
    await (await post(baseUrl, rpcBody('message/send', { message }))).arrayBuffer();
    await (await post(baseUrl, rpcBody('message/send', { message }), 'wrong')).arrayBuffer();
    await (await post(baseUrl, rpcBody('no/such', {}))).arrayBuffer();
    await (await fetch(`${baseUrl}/elsewhere`)).arrayBuffer();

    const count = (route: string, status: string) =>
      sample(metrics, 'iop_http_requests_total', { surface: 'a2a', route, status });
    await eventually(async () => (await count('other', '404')) === 1);
    expect(await count('agent-card', '200')).toBe(1);
    expect(await count('rpc message/send', '200')).toBe(1);
    // Rejected before the body is read: the method is unknown to the label.
    expect(await count('rpc other', '401')).toBe(1);
    // JSON-RPC errors travel in a 200 answer.
    expect(await count('rpc other', '200')).toBe(1);
    const { body } = await metrics.render();
    expect(body).toContain(
      'iop_http_request_duration_seconds_count{surface="a2a",route="rpc message/send"} 1',
    );
  });

  it('observes the time to the first artifact chunk of a stream once', async () => {
    const metrics = new EdgeMetrics();
    const service = new FakeEdgeService(() => ({
      parts: [
        { type: 'text-delta', text: 'one ' },
        { type: 'text-delta', text: 'two' },
        { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
      ],
      delayMs: 20,
    }));
    const baseUrl = await start(metrics, service);
    const response = await post(baseUrl, rpcBody('message/stream', { message }));
    const text = await response.text();
    expect(text).toContain('artifact-update');
    await eventually(
      async () =>
        (await sample(metrics, 'iop_http_requests_total', {
          surface: 'a2a',
          route: 'rpc message/stream',
          status: '200',
        })) === 1,
    );
    const { body } = await metrics.render();
    expect(body).toContain('iop_time_to_first_token_seconds_count{surface="a2a"} 1');
    const sum = Number(/^iop_time_to_first_token_seconds_sum\{surface="a2a"\} (\S+)$/m.exec(body)?.[1]);
    // The first chunk follows one scripted 20 ms delay.
    expect(sum).toBeGreaterThanOrEqual(0.015);
  });
});
