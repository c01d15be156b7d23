import { systemClock } from '../clock.js';
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { FakeNodes } from '../pool/test-support/pool-fixture.js';
import { FakeEdgeService, fakeNode } from '../test-support/fake-edge-service.js';
import { createSelfSignedCertificate } from '../tls/self-signed-certificate.js';
import type { UiAssets } from './ui-assets.js';
import { routeOf, startUiSurface, type UiCore, type UiSurface } from './ui-surface.js';

const YAML = `
edge: { id: edge-ui-test }
refresh: { enabled: false, admin_token: "" }
ui: { enabled: true, listen: "127.0.0.1:0" }
models:
  - { id: llama, providers: { n1-ollama: "llama3.2:latest" } }
nodes:
  - id: n1
    adapters:
      ollama: { base_url: "http://127.0.0.1:11434" }
    providers:
      - { id: n1-ollama, type: ollama, category: local_inference, adapter: ollama, models: ["llama3.2:latest"] }
`;

function config(patch = ''): EdgeConfig {
  const result = parseConfigText(YAML + patch, 'ui-test.yaml');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const assets: UiAssets = new Map([
  ['/index.html', { contentType: 'text/html', body: Buffer.from('<p>ui</p>') }],
]);
const noRejections = { providerRejections: { get: () => Promise.resolve({ values: [] }) } };

let events: ClosableEventBus;
const surfaces: UiSurface[] = [];
afterEach(async () => {
  for (const surface of surfaces.splice(0)) await surface.close();
  events?.close();
});

function core(edgeConfig: EdgeConfig, service = new FakeEdgeService()): UiCore {
  events = createEventBus({ replaySize: 16, queueSize: 64 });
  return {
    config: edgeConfig,
    service: service,
    events,
    logger: silentLogger,
    refresher: undefined,
    metrics: noRejections as unknown as UiCore['metrics'],
  };
}

async function waitFor(predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('ui surface', () => {
  it('beyond loopback needs the admin token and edge.tls, then serves HTTPS with the edge certificate', async () => {
    const open = config().ui.listen.replace('127.0.0.1', '0.0.0.0');
    const base = config();
    await expect(
      startUiSurface(core({ ...base, ui: { enabled: true, listen: open } }), { assets }),
    ).rejects.toMatchObject({ code: 'insecure_listen', message: expect.stringContaining('admin_token') });
    const tokened = {
      ...base,
      ui: { enabled: true, listen: open },
      refresh: { ...base.refresh, admin_token: 'tok' },
    };
    await expect(startUiSurface(core(tokened), { assets })).rejects.toMatchObject({
      code: 'insecure_listen',
      message: expect.stringContaining('edge.tls'),
    });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'iop-ui-tls-'));
    try {
      const certificate = createSelfSignedCertificate({ commonName: 'iop-edge test', hosts: ['127.0.0.1'] });
      const certFile = path.join(dir, 'cert.pem');
      const keyFile = path.join(dir, 'key.pem');
      await writeFile(certFile, certificate.certificatePem);
      await writeFile(keyFile, certificate.privateKeyPem);
      const secured = {
        ...tokened,
        edge: { ...base.edge, tls: { enabled: true, cert_file: certFile, key_file: keyFile } },
      };
      const surface = await startUiSurface(core(secured), { assets });
      surfaces.push(surface);
      expect(surface.address).toMatch(/^https:\/\//);
      const url = new URL(`${surface.address.replace('0.0.0.0', '127.0.0.1')}api/v1/overview`);
      const get = (headers: Record<string, string>) =>
        new Promise<number>((resolve, reject) => {
          const request = https.get(url, { ca: certificate.certificatePem, headers }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          });
          request.on('error', reject);
        });
      expect(await get({})).toBe(401);
      expect(await get({ authorization: 'Bearer tok' })).toBe(200);
      const cookie = await new Promise<string>((resolve, reject) => {
        const request = https.request(
          new URL('/api/v1/login', url),
          { method: 'POST', ca: certificate.certificatePem, headers: { 'content-type': 'application/json' } },
          (response) => {
            response.resume();
            resolve(String(response.headers['set-cookie'] ?? ''));
          },
        );
        request.on('error', reject);
        request.end(JSON.stringify({ token: 'tok' }));
      });
      expect(cookie).toContain('; Secure');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('follows the event bus into the run ring, the charts and the departures, and lets go of it on close', async () => {
    const service = new FakeEdgeService(undefined, () => [fakeNode('n1')]);
    const uiCore = core(config(), service);
    const surface = await startUiSurface(uiCore, { assets, clock: { ...systemClock, now: () => 10_000 } });
    expect(events.subscriberCount).toBe(1);
    events.publish({
      type: 'run',
      event: {
        runId: 'r1',
        nodeId: 'n1',
        seq: 0,
        atUnixMs: 9000,
        part: { type: 'start', sessionId: 's', adapter: 'ollama', target: 'llama3.2:latest' },
      },
    });
    events.publish({
      type: 'run',
      event: {
        runId: 'r1',
        nodeId: 'n1',
        seq: 1,
        atUnixMs: 9500,
        part: { type: 'complete', detail: '', finishReason: 'stop', backendMs: 400 },
      },
    });
    events.publish({
      type: 'node',
      event: {
        kind: 'disconnected',
        nodeId: 'n2',
        alias: 'two',
        reason: 'heartbeat-timeout',
        atUnixMs: 9600,
      },
    });
    await waitFor(() => surface.runLog.get('r1')?.run.status === 'completed');
    expect(surface.runLog.get('r1')?.run).toMatchObject({
      provider: 'n1-ollama',
      model: 'llama',
      overhead_ms: 100,
    });
    expect(surface.charts.snapshot().points.at(-2)).toMatchObject({ requests_per_s: 0.1, p50_ms: 500 });
    const overview = (await (await fetch(`${surface.address}api/v1/overview`)).json()) as {
      departures: { node_id: string; reason: string }[];
      nodes: { label: string }[];
    };
    expect(overview.departures).toEqual([
      expect.objectContaining({ node_id: 'n2', reason: 'heartbeat-timeout' }),
    ]);
    expect(overview.nodes[0]?.label).toBe('node0');
    await surface.close();
    expect(events.subscriberCount).toBe(0);
    await expect(fetch(`${surface.address}api/v1/overview`)).rejects.toThrow();
  });

  it('answers playground prompts through the service admission (model destination, surface ui)', async () => {
    const edgeConfig = config();
    const nodes = new FakeNodes();
    nodes.connect('n1');
    const pool = createProviderPool({ config: edgeConfig, nodes });
    const service = new FakeEdgeService(undefined, () => nodes.list(), pool);
    try {
      const surface = await startUiSurface(core(edgeConfig, service), { assets });
      surfaces.push(surface);
      const response = await fetch(`${surface.address}api/v1/playground`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'llama', prompt: 'ping', max_tokens: 16 }),
      });
      const text = await response.text();
      expect(text).toContain('"provider":"n1-ollama"');
      expect(text).toContain('event: delta\ndata: {"text":"echo: ping"}');
      expect(text).toContain('"status":"completed"');
      expect(service.submitted[0]).toMatchObject({
        destination: { kind: 'model', model: 'llama' },
        surface: 'ui',
        params: expect.objectContaining({ maxTokens: 16 }),
      });
      await waitFor(() => pool.snapshot().every((provider) => provider.inFlight === 0));
    } finally {
      pool.close();
    }
  });
});

describe('routeOf', () => {
  it('maps a run on (node, adapter, target) to its provider and model, or to nothing', () => {
    const edgeConfig = config();
    expect(routeOf(edgeConfig, 'n1', 'ollama', 'llama3.2:latest')).toEqual({
      provider: 'n1-ollama',
      model: 'llama',
    });
    expect(routeOf(edgeConfig, 'n1', 'ollama', 'other')).toEqual({ provider: '', model: '' });
    expect(routeOf(edgeConfig, 'n2', 'ollama', 'llama3.2:latest')).toEqual({ provider: '', model: '' });
  });
});
