import { describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { ManualClock } from '@iop/clock';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import { EdgeMetrics } from '../metrics/edge-metrics.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { FakeNodes } from '../pool/test-support/pool-fixture.js';
import { createOpenAISurface } from './openai-surface.js';
import { parseListenAddress } from '../net/listen-address.js';
import { FakeEdgeService, textRun } from '../test-support/fake-edge-service.js';
import { eventually, harnessConfig } from '../surface-kit/test-support/surface-harness.js';
import { portOf, rawHttpRequest } from '../test-support/raw-http-request.js';

describe('createOpenAISurface', () => {
  it('refuses a foreign Host (421) or Origin (403) before admission; serves its own address and allowed_hosts', async () => {
    const config = { ...harnessConfig(), http: { allowed_hosts: ['api.example.com'] } };
    const service = new FakeEdgeService(() => ({ parts: textRun(['hello']) }));
    const surface = await createOpenAISurface({ config, service, logger: silentLogger, clock: systemClock });
    if (!surface) throw new Error('surface should start');
    try {
      const port = portOf(surface.address);
      const body = JSON.stringify({ model: 'llama3', messages: [{ role: 'user', content: 'hi' }] });
      const post = (headers: Record<string, string>) =>
        rawHttpRequest(
          port,
          'POST',
          '/v1/chat/completions',
          { 'content-type': 'application/json', ...headers },
          body,
        );
      const rebound = await post({ host: `rebind.evil.example:${port}` });
      expect(rebound.status).toBe(421);
      expect(JSON.parse(rebound.body)).toMatchObject({
        error: { code: 'host_not_allowed', type: 'invalid_request_error' },
      });
      expect((await post({ host: `127.0.0.1:${port}`, origin: 'http://evil.example' })).status).toBe(403);
      expect(service.submitted).toHaveLength(0);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'api.example.com']) {
        expect((await post({ host })).status).toBe(200);
      }
      expect(service.submitted).toHaveLength(3);
    } finally {
      await surface.close();
    }
  });

  it('returns undefined when openai.enabled is false', async () => {
    const config = harnessConfig({ enabled: false });
    const service = new FakeEdgeService(() => ({ parts: textRun(['x']) }));
    const surface = await createOpenAISurface({ config, service, logger: silentLogger, clock: systemClock });
    expect(surface).toBeUndefined();
  });

  it('listens on openai.listen, and close() cuts open streams and frees the leases their runs hold', async () => {
    const config = harnessConfig();
    const nodes = new FakeNodes();
    nodes.connect('node-1');
    nodes.connect('node-2');
    // The pool belongs to the service now (the surface has none): the fake admits model runs through it.
    const pool = createProviderPool({ config, nodes });
    const service = new FakeEdgeService(
      () => ({ parts: textRun(Array.from({ length: 100 }, () => 'tick ')), delayMs: 20 }),
      nodes.list,
      pool,
    );
    const clock = new ManualClock();
    const surface = await createOpenAISurface(
      { config, service, logger: silentLogger, clock },
      { closeGraceMs: 50 },
    );
    if (!surface) throw new Error('surface should start');
    expect(surface.name).toBe('openai');
    expect(surface.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const client = new OpenAI({ baseURL: `${surface.address}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'pooled',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const reading = (async () => {
      let chunks = 0;
      try {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) chunks += 1;
      } catch {
        // the connection is cut by close()
      }
      return chunks;
    })();
    await eventually(() => expect(pool.totals().inFlight).toBe(1));
    const closing = surface.close();
    // The stream is still open within the grace; once it has passed, it is cut.
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.pendingDelays()).toContain(50);
    clock.advance(50);
    await closing;
    const chunks = await reading;
    expect(chunks).toBeLessThan(100);
    await eventually(() => {
      expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
      expect(service.active).toBe(0);
      expect(service.cancels).toBe(1);
    });
    pool.close();
  });
});

describe('metrics', () => {
  // Provider dispatch and rejection counters are admission's (the service's), not the surface's: they are asserted
  // on the runtime's shared metrics in edge-runtime.test.ts. Here the 429 still comes from the real pool.
  it('records requests, first token and overhead in the shared EdgeMetrics', async () => {
    const config = harnessConfig({ capacityA: 1, capacityB: 1, maxQueue: 0 });
    const nodes = new FakeNodes();
    nodes.connect('node-1');
    nodes.connect('node-2');
    const pool = createProviderPool({ config, nodes });
    const service = new FakeEdgeService(
      () => ({ parts: textRun(['a', 'b']), delayMs: 30 }),
      nodes.list,
      pool,
    );
    const metrics = new EdgeMetrics();
    const surface = await createOpenAISurface({
      config,
      service,
      logger: silentLogger,
      clock: systemClock,
      metrics,
    });
    if (!surface) throw new Error('surface should start');
    const client = new OpenAI({ baseURL: `${surface.address}/v1`, apiKey: 'k', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const results = await Promise.allSettled([
      client.chat.completions.create({ model: 'pooled', messages }),
      client.chat.completions.stream({ model: 'pooled', messages }).finalChatCompletion(),
      new Promise((resolve) => setTimeout(resolve, 10)).then(() =>
        client.chat.completions.create({ model: 'pooled', messages }),
      ),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    await fetch(`${surface.address}/nope`);
    await surface.close();
    pool.close();
    const { body } = await metrics.render();
    expect(body).toContain(
      'iop_http_requests_total{surface="openai",route="/v1/chat/completions",status="200"} 2',
    );
    expect(body).toContain(
      'iop_http_requests_total{surface="openai",route="/v1/chat/completions",status="429"} 1',
    );
    expect(body).toContain('iop_http_requests_total{surface="openai",route="other",status="404"} 1');
    // Both providers took one run each (capacity 1 each, no queue), the third was refused by the pool.
    expect([...service.peakByProvider.entries()].sort()).toEqual([
      ['prov-a', 1],
      ['prov-b', 1],
    ]);
    expect(service.submitted.map((run) => `${run.providerId}@${run.node}`).sort()).toEqual([
      'prov-a@node-1',
      'prov-b@node-2',
    ]);
    expect(body).toContain('iop_time_to_first_token_seconds_count{surface="openai"} 1');
    expect(body).toContain('iop_overhead_seconds_count{surface="openai"} 2');
  });
});

describe('parseListenAddress', () => {
  it('parses host:port, IPv6 and rejects garbage', () => {
    expect(parseListenAddress('127.0.0.1:18081')).toEqual({ host: '127.0.0.1', port: 18081 });
    expect(parseListenAddress('[::1]:80')).toEqual({ host: '::1', port: 80 });
    expect(parseListenAddress(':9000')).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(() => parseListenAddress('localhost')).toThrow(/host:port/);
    expect(() => parseListenAddress('h:70000')).toThrow(/host:port/);
  });
});
