// Cross-process end to end of the loaded-model preference (issue 32): a real `iop-edge serve` and a real
// `iop-node run` with two Ollama adapter instances over two fake Ollama servers, one model served by both
// providers at the same priority and capacity. Only the `warm` backend holds the model loaded at the start.
//   1. The node reports each backend's /api/ps list (health probes off: residency does not need them), and the
//      edge shows it in ListProviders.
//   2. Sequential requests (both providers free every time) all go to the warm provider; round robin alone would
//      alternate. No cold load is counted.
//   3. Two overlapping requests: the lowest in_flight still wins first, so the second goes to the cold provider,
//      which counts one `iop_model_cold_loads_total{provider="cold"}`; after that run the node asks the cold
//      backend again and the edge learns the model is loaded there too.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import { startFakeOllama, type FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { FABRIC_TOKEN, OLLAMA_SERVED } from '../support/fabric-config.js';

jest.setTimeout(90_000);

const MODEL = 'e2e-resident';
const SEQUENTIAL = 8;

const group = new ProcessGroup();
let warm: FakeServer;
let cold: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;
let client: OpenAI;

function ollamaInstance(name: string, url: string): Record<string, unknown> {
  return { name, type: 'ollama', enabled: true, base_url: url, request_timeout_ms: 30_000 };
}

function ollamaProvider(id: string, adapter: string): Record<string, unknown> {
  return {
    id,
    type: 'ollama',
    category: 'local_inference',
    adapter,
    models: [OLLAMA_SERVED],
    capacity: 2,
    priority: 0,
    max_queue: 8,
    queue_timeout_ms: 20_000,
  };
}

function residentConfig(dataDir: string): Record<string, unknown> {
  return {
    edge: {
      id: 'edge-resident-e2e',
      listen: '127.0.0.1:0',
      data_dir: dataDir,
      register_timeout_ms: 1000,
      heartbeat_interval_ms: 500,
      heartbeat_timeout_ms: 3000,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 60 },
    a2a: { enabled: false },
    // `cold` first in config order: without the preference round robin would start there.
    models: [{ id: MODEL, providers: { cold: OLLAMA_SERVED, warm: OLLAMA_SERVED } }],
    nodes: [
      {
        id: 'n1',
        alias: 'n1',
        token: FABRIC_TOKEN,
        runtime: { max_concurrency: 8, health_probe_interval_ms: 0, resident_poll_interval_ms: 300 },
        discovery: { openai_compat_urls: [], local_ports: [] },
        adapters: {
          instances: [ollamaInstance('ollama-cold', cold.url), ollamaInstance('ollama-warm', warm.url)],
        },
        providers: [ollamaProvider('cold', 'ollama-cold'), ollamaProvider('warm', 'ollama-warm')],
      },
    ],
  };
}

function chats(server: FakeServer): number {
  return server.requests.filter((request) => request.path === '/api/chat').length;
}

async function residency(): Promise<Record<string, { models: string[]; state: string }>> {
  const providers = await admin.listProviders();
  return Object.fromEntries(
    providers.map((provider) => [
      provider.providerId,
      { models: provider.residentModels, state: provider.residentState },
    ]),
  );
}

async function coldLoads(): Promise<Record<string, number>> {
  const response = await fetch(`http://${edge.addresses.metrics.replace(/^https?:\/\//, '')}/metrics`);
  const text = await response.text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^iop_model_cold_loads_total\{provider="([^"]+)"\} (\d+)$/gm)) {
    counts[match[1] ?? ''] = Number(match[2]);
  }
  return counts;
}

beforeAll(async () => {
  warm = await startFakeOllama({ behavior: { models: [OLLAMA_SERVED], tokenDelayMs: 5 } });
  cold = await startFakeOllama({ behavior: { models: [OLLAMA_SERVED], tokenDelayMs: 5 } });
  // Load the model on `warm` only (Ollama: an empty prompt loads it).
  const loaded = await fetch(`${warm.url}/api/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: OLLAMA_SERVED, prompt: '', stream: false }),
  });
  expect(loaded.status).toBe(200);
  const dir = await group.tempDir('iop-e2e-resident-');
  edge = await startEdgeProcess(group, dir, residentConfig(`${dir}/data`));
  node = startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: 'n1',
    token: FABRIC_TOKEN,
    dataDir: await group.tempDir('iop-e2e-resident-n1-'),
  });
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  client = new OpenAI({
    baseURL: `${edge.addresses.openai}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 30_000,
  });
}, 120_000);

afterAll(async () => {
  admin?.close();
  await group.close();
  await warm?.close();
  await cold?.close();
});

describe('loaded-model preference for Ollama', () => {
  it('the node reports which backend holds the model loaded, and the edge shows it', async () => {
    await waitUntil(
      async () => {
        const known = await residency();
        return known['warm']?.state === 'fresh' && known['cold']?.state === 'fresh';
      },
      40_000,
      async () => `resident lists\n${JSON.stringify(await residency())}\n${node.describe()}`,
    );
    expect(await residency()).toEqual({
      cold: { models: [], state: 'fresh' },
      warm: { models: [OLLAMA_SERVED], state: 'fresh' },
    });
  });

  it(`${SEQUENTIAL} sequential requests with both providers free all go to the provider with the model loaded`, async () => {
    const before = { warm: chats(warm), cold: chats(cold) };
    for (let index = 0; index < SEQUENTIAL; index += 1) {
      const answer = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `turn ${index}` }],
      });
      expect(answer.choices[0]?.message.content).toBeTruthy();
    }
    expect({ warm: chats(warm) - before.warm, cold: chats(cold) - before.cold }).toEqual({
      warm: SEQUENTIAL,
      cold: 0,
    });
    expect((await coldLoads())['cold'] ?? 0).toBe(0);
    expect((await coldLoads())['warm'] ?? 0).toBe(0);
  });

  it('overlapping requests still spread by in_flight; the one on the cold provider counts a cold load', async () => {
    warm.setBehavior({ tokenDelayMs: 150 });
    cold.setBehavior({ tokenDelayMs: 150 });
    const before = { warm: chats(warm), cold: chats(cold) };
    const first = client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'overlap one' }],
    });
    await waitUntil(
      () => chats(warm) > before.warm,
      10_000,
      () => 'first request at the warm backend',
    );
    const second = client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'overlap two' }],
    });
    await Promise.all([first, second]);
    expect({ warm: chats(warm) - before.warm, cold: chats(cold) - before.cold }).toEqual({
      warm: 1,
      cold: 1,
    });
    expect(await coldLoads()).toMatchObject({ cold: 1 });
    expect((await coldLoads())['warm'] ?? 0).toBe(0);
    // The run loaded the model on `cold`: the node asks again after it and the edge learns it.
    await waitUntil(
      async () => (await residency())['cold']?.models.includes(OLLAMA_SERVED) === true,
      10_000,
      async () => `resident lists\n${JSON.stringify(await residency())}`,
    );
    expect(await admin.listProviders()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ providerId: 'cold', inFlight: 0 }),
        expect.objectContaining({ providerId: 'warm', inFlight: 0 }),
      ]),
    );
  });
});
