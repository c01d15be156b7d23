import { afterEach, describe, expect, it } from '@jest/globals';
import type { HttpListener } from '../http/listen-http.js';
import { EdgeMetrics } from './edge-metrics.js';
import { startMetricsServer, type Readiness } from './metrics-server.js';
import { portOf, rawHttpRequest } from '../test-support/raw-http-request.js';

let listener: HttpListener | undefined;

afterEach(async () => {
  await listener?.close();
  listener = undefined;
});

describe('metrics server', () => {
  it('answers its own address and allowed_hosts, and 421 for any other Host', async () => {
    const metrics = new EdgeMetrics({ providerSnapshot: () => [], connectedNodes: () => 0 });
    listener = await startMetricsServer({
      listen: '127.0.0.1:0',
      allowedHosts: ['prometheus-target.internal'],
      metrics,
      readiness: () => ({ ready: true, checks: {} }),
    });
    const port = portOf(listener.address);
    const scrape = (host: string) => rawHttpRequest(port, 'GET', '/metrics', { host });
    expect((await scrape(`rebind.evil.example:${port}`)).status).toBe(421);
    expect((await scrape(`127.0.0.1:${port}`)).status).toBe(200);
    expect((await scrape('prometheus-target.internal:9999')).status).toBe(200);
  });

  it('exposes counters, per-provider gauges read at scrape time, healthz and readyz', async () => {
    let inFlight = 2;
    const metrics = new EdgeMetrics({
      providerSnapshot: () => [{ providerId: 'vllm-a', nodeId: 'n1', capacity: 4, inFlight, queued: 1 }],
      connectedNodes: () => 3,
    });
    let readiness: Readiness = { ready: false, checks: { transport: true, config: false } };
    listener = await startMetricsServer({ listen: '127.0.0.1:0', metrics, readiness: () => readiness });
    const base = `http://${listener.address}`;

    metrics.httpRequests.inc({ surface: 'openai', route: '/v1/chat/completions', status: '200' });
    metrics.frameErrors.inc({ code: 'frame_too_large' });
    let text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain(
      'iop_http_requests_total{surface="openai",route="/v1/chat/completions",status="200"} 1',
    );
    expect(text).toContain('iop_provider_in_flight{provider="vllm-a",node="n1"} 2');
    expect(text).toContain('iop_provider_capacity{provider="vllm-a",node="n1"} 4');
    expect(text).toContain('iop_nodes_connected 3');
    expect(text).toContain('iop_frame_errors_total{code="frame_too_large"} 1');
    inFlight = 0;
    text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain('iop_provider_in_flight{provider="vllm-a",node="n1"} 0');

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      status: 'not_ready',
      checks: { transport: true, config: false },
    });
    readiness = { ready: true, checks: { transport: true, config: true } };
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});
