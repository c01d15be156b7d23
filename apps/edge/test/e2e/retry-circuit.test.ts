// Retry before the first byte and the passive circuit breaker across processes (issue 32): a real `iop-edge serve`,
// a real `iop-node run` and three fake OpenAI-compatible backends on 127.0.0.1. Model `e2e-retry` is served by
// pa (priority 0, backend A) and pb (priority 1, backend B); model `e2e-mid` by pc (priority 0, backend C, which
// drops the connection after its first content chunks) and pb. Health probes are off, so the circuit is the only thing
// that learns backend A died. Done when: with A killed after serving, the next 16 requests all succeed (the first
// ones with `x-iop-attempts: 2`), pa's circuit opens within 3 failures (admin API and `/metrics`), and it closes
// again through a half-open probe once A is back on its port; a failure after the first chunk ends the stream
// with an error and is not retried.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  metricSum,
  scrapeMetrics,
  sleep,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';

jest.setTimeout(90_000);

const TOKEN = 'iop_e2e_retry_circuit_token_012345';
const SERVED = 'served-model';
const COOLDOWN_MS = 1_500;

const group = new ProcessGroup();
const fakes = new Map<string, FakeServer>();
let edge: EdgeProcess;
let admin: AdminClient;
let portA = 0;

function instance(name: string, server: FakeServer) {
  return {
    name,
    type: 'openai_compat',
    enabled: true,
    provider: 'vllm',
    base_url: `${server.url}/v1`,
    request_timeout_ms: 10_000,
  };
}

function provider(id: string, adapter: string, priority: number) {
  return {
    id,
    type: 'vllm',
    category: 'api',
    adapter,
    models: [SERVED],
    capacity: 4,
    max_queue: 16,
    queue_timeout_ms: 5_000,
    priority,
  };
}

interface Answer {
  status: number;
  attempts: string | null;
  provider: string | null;
  body: string;
}

let conversation = 0;

/** One request of a new conversation each time (one conversation would stick to a provider: affinity). */
async function chat(model: string, stream: boolean): Promise<Answer> {
  conversation += 1;
  const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream,
      messages: [{ role: 'user', content: `say something (conversation ${conversation})` }],
    }),
  });
  return {
    status: response.status,
    attempts: response.headers.get('x-iop-attempts'),
    provider: response.headers.get('x-iop-provider'),
    body: await response.text(),
  };
}

async function healthOf(providerId: string): Promise<string> {
  const providers = await admin.listProviders();
  return providers.find((entry) => entry.providerId === providerId)?.health ?? 'missing';
}

async function circuitMetric(providerId: string): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_provider_circuit_state', {
    provider: providerId,
  });
}

beforeAll(async () => {
  const behavior = { models: [SERVED], tokenCount: 4, tokenDelayMs: 2 };
  const a = await startFakeOpenAI({ behavior });
  const b = await startFakeOpenAI({ behavior });
  const c = await startFakeOpenAI({ behavior: { ...behavior, failure: { kind: 'drop', afterTokens: 3 } } });
  fakes.set('a', a).set('b', b).set('c', c);
  portA = Number(new URL(a.url).port);
  const dir = await group.tempDir('iop-e2e-retry-');
  edge = await startEdgeProcess(group, dir, {
    edge: {
      id: 'edge-retry-e2e',
      listen: '127.0.0.1:0',
      data_dir: path.join(dir, 'data'),
      register_timeout_ms: 1000,
      heartbeat_interval_ms: 500,
      heartbeat_timeout_ms: 5000,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 30 },
    a2a: { enabled: false },
    routing: {
      retry: { max_attempts: 2 },
      circuit_breaker: { consecutive_failures: 3, cooldown_ms: COOLDOWN_MS },
    },
    models: [
      { id: 'e2e-retry', providers: { pa: SERVED, pb: SERVED } },
      { id: 'e2e-mid', providers: { pc: SERVED, pb: SERVED } },
    ],
    nodes: [
      {
        id: 'n1',
        token: TOKEN,
        runtime: { max_concurrency: 16, health_probe_interval_ms: 0 },
        adapters: { instances: [instance('va', a), instance('vb', b), instance('vc', c)] },
        providers: [provider('pa', 'va', 0), provider('pb', 'vb', 1), provider('pc', 'vc', 0)],
      },
    ],
  });
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: 'n1',
    token: TOKEN,
    dataDir: await group.tempDir('iop-e2e-retry-node-'),
  });
  await waitUntil(
    async () => (await admin.listProviders()).filter((entry) => entry.status === 'ready').length === 3,
    30_000,
    () => `3 ready providers\n${edge.describe()}`,
  );
}, 60_000);

afterAll(async () => {
  await group.close();
  for (const fake of fakes.values()) await fake.close();
});

describe('retry before the first byte and the circuit breaker', () => {
  it('keeps every request succeeding when a backend dies, opens its circuit within 3 failures, closes it after', async () => {
    // In use: A serves (pa has the lower priority number).
    const before = await chat('e2e-retry', false);
    expect(before).toMatchObject({ status: 200, provider: 'pa', attempts: '1' });
    await fakes.get('a')?.close();

    const answers: Answer[] = [];
    for (let index = 0; index < 16; index += 1) answers.push(await chat('e2e-retry', index % 2 === 1));
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    expect(answers.map((answer) => answer.provider)).toEqual(answers.map(() => 'pb'));
    const retried = answers.filter((answer) => answer.attempts === '2').length;
    // pa (lower priority number) is tried first until its third failure opens the circuit; from then on it is
    // skipped and pb answers at the first attempt.
    expect(retried).toBe(3);
    expect(answers.slice(retried).map((answer) => answer.attempts)).toEqual(
      answers.slice(retried).map(() => '1'),
    );
    for (const answer of answers.filter((entry, index) => index % 2 === 1 && entry.status === 200)) {
      expect(answer.body).toContain('data: [DONE]');
    }
    expect(await healthOf('pa')).toBe('open');
    expect(await circuitMetric('pa')).toBe(1);
    // What `iop-edge nodes list` shows: the admin API's NodeInfo of the node carries the same health.
    const nodes = await admin.listNodes();
    const pa = nodes
      .find((node) => node.nodeId === 'n1')
      ?.providers.find((entry) => entry.providerId === 'pa');
    expect(pa?.health).toBe('open');
    const samples = await scrapeMetrics(edge.addresses.metrics);
    expect(metricSum(samples, 'iop_run_retries_total', { reason: 'upstream_unreachable' })).toBe(retried);

    // Back on its port: after the cool-down one half-open probe goes to pa and closes the circuit.
    fakes.set('a', await startFakeOpenAI({ port: portA, behavior: { models: [SERVED], tokenCount: 4 } }));
    await sleep(COOLDOWN_MS + 100);
    expect(await healthOf('pa')).toBe('half_open');
    const probe = await chat('e2e-retry', false);
    expect(probe).toMatchObject({ status: 200, provider: 'pa', attempts: '1' });
    expect(await healthOf('pa')).not.toMatch(/open/);
    expect(await circuitMetric('pa')).toBe(0);
    const after = await chat('e2e-retry', true);
    expect(after).toMatchObject({ status: 200, provider: 'pa', attempts: '1' });
  });

  it('ends a stream that fails after its first chunk with an error event, without a retry', async () => {
    const requestsToB = fakes.get('b')?.requests.length ?? 0;
    const answer = await chat('e2e-mid', true);
    expect(answer).toMatchObject({ status: 200, provider: 'pc', attempts: '1' });
    const lines = answer.body.split('\n').filter((line) => line.startsWith('data: '));
    // The first chunk, then the error object: no second attempt and no [DONE].
    expect(lines.some((line) => line.includes('"content"'))).toBe(true);
    expect(lines.at(-1)).toContain('"error"');
    expect(answer.body).not.toContain('[DONE]');
    expect(fakes.get('b')?.requests.length ?? 0).toBe(requestsToB);
    const samples = await scrapeMetrics(edge.addresses.metrics);
    expect(metricSum(samples, 'iop_run_retries_total', { reason: 'upstream_error' })).toBe(0);
    // Output started: the provider's circuit counts no failure for it.
    expect(await healthOf('pc')).not.toMatch(/open/);
  });
});
