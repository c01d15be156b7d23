// Cross-process end to end of issue 32's fair share and conversation affinity: a real `iop-edge serve` and two
// real `iop-node run` processes over fake inference servers on 127.0.0.1, three API keys.
//   (a) affinity: model `conv` is served by two providers of node n1 (the fake Ollama and the fake vLLM, capacity
//       4 each). 12 sequential requests with one `x-session-id` land on one provider (≥ 11); 50 concurrent
//       requests of 50 conversations (25 with their own `x-session-id`, 25 told apart only by their first user
//       message, the hashed head) still use both, and neither backend ever sees more than 4 at once.
//   (b) fair share: model `solo` is n2's vLLM provider, capacity 1, in front of a fake with a fixed 200 ms time
//       to first token. Key "noisy" queues 30 requests; key "quiet" sends 3 while they wait: quiet's worst
//       `x-iop-queue-ms` is ≤ 3 s (about one service time per noisy request ahead of it in round-robin order;
//       a plain FIFO makes it wait for the ~22 still ahead, ≥ 4 s), and every noisy request completes.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startFakeOllama, startFakeOpenAI, type FakeServer, type RecordedRequest } from '@iop/testkit';
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
import { peakConcurrency } from '../support/peak-concurrency.js';
import {
  FABRIC_TOKEN,
  OLLAMA_SERVED,
  VLLM_SERVED,
  fabricConfig,
  ollamaProviderId,
  vllmProviderId,
} from '../support/fabric-config.js';

jest.setTimeout(120_000);

const CONV = 'conv';
const SOLO = 'solo';
const SERVICE_MS = 200;
const KEYS = { conv: 'sk-e2e-conv', noisy: 'sk-e2e-noisy', quiet: 'sk-e2e-quiet' } as const;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let slow: FakeServer;
let edge: EdgeProcess;
let admin: AdminClient;

const chatPaths = new Set(['/api/chat', '/v1/chat/completions']);

/** The chat requests a backend received, from the `from`-th one on (other paths, e.g. the node's /api/ps, skipped). */
function chats(server: FakeServer, from = 0): RecordedRequest[] {
  return server.requests.filter((request) => chatPaths.has(request.path)).slice(from);
}

interface ChatResult {
  status: number;
  queueMs: number;
  /** Dispatches the run took (x-iop-attempts: a retry before the first byte makes 2). */
  attempts: number;
  body: string;
}

async function chat(
  key: string,
  model: string,
  content: string,
  headers: Record<string, string> = {},
): Promise<ChatResult> {
  const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({
      model,
      messages: [
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content },
      ],
    }),
  });
  const body = await response.text();
  return {
    status: response.status,
    queueMs: Number(response.headers.get('x-iop-queue-ms')),
    attempts: Number(response.headers.get('x-iop-attempts') ?? '1'),
    body,
  };
}

beforeAll(async () => {
  ollama = await startFakeOllama({ behavior: { models: [OLLAMA_SERVED], tokenDelayMs: 5 } });
  vllm = await startFakeOpenAI({ behavior: { models: [VLLM_SERVED], tokenDelayMs: 5 } });
  slow = await startFakeOpenAI({
    behavior: { models: [VLLM_SERVED], firstTokenDelayMs: SERVICE_MS, tokenCount: 2 },
  });
  const dir = await group.tempDir('iop-e2e-fairshare-');
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [
      { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4, maxQueue: 32, maxConcurrency: 8 },
      {
        id: 'n2',
        ollamaUrl: ollama.url,
        vllmUrl: slow.url,
        capacity: 1,
        maxQueue: 40,
        queueTimeoutMs: 30_000,
      },
    ],
  });
  const config = {
    ...base,
    openai: {
      ...(base.openai as Record<string, unknown>),
      api_keys: [
        { id: 'conv', key: KEYS.conv },
        { id: 'noisy', key: KEYS.noisy },
        { id: 'quiet', key: KEYS.quiet },
      ],
    },
    routing: { affinity: { max_entries: 1000, ttl_ms: 600_000 } },
    models: [
      {
        id: CONV,
        providers: { [ollamaProviderId('n1')]: OLLAMA_SERVED, [vllmProviderId('n1')]: VLLM_SERVED },
      },
      { id: SOLO, providers: { [vllmProviderId('n2')]: VLLM_SERVED } },
    ],
  };
  edge = await startEdgeProcess(group, dir, config);
  for (const nodeId of ['n1', 'n2']) {
    startNodeProcess(group, {
      edge: edge.addresses.transport,
      nodeId,
      token: FABRIC_TOKEN,
      dataDir: await group.tempDir(`iop-e2e-fairshare-${nodeId}-`),
    });
  }
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitUntil(
    async () => (await admin.listProviders()).every((entry) => entry.status === 'ready'),
    40_000,
    () => `providers ready\n${edge.describe()}`,
  );
}, 120_000);

afterAll(async () => {
  admin?.close();
  await group.close();
  await ollama?.close();
  await vllm?.close();
  await slow?.close();
});

describe('conversation affinity', () => {
  it('12 sequential turns with one x-session-id: at least 11 on one provider, counted as hits', async () => {
    const before = await scrapeMetrics(edge.addresses.metrics);
    const fromOllama = chats(ollama).length;
    const fromVllm = chats(vllm).length;
    for (let turn = 0; turn < 12; turn += 1) {
      const result = await chat(KEYS.conv, CONV, `turn ${turn}`, { 'x-session-id': 'conv-1' });
      expect(result.status).toBe(200);
    }
    const onOllama = chats(ollama, fromOllama).length;
    const onVllm = chats(vllm, fromVllm).length;
    expect(onOllama + onVllm).toBe(12);
    expect(Math.max(onOllama, onVllm)).toBeGreaterThanOrEqual(11);
    const after = await scrapeMetrics(edge.addresses.metrics);
    const hits =
      metricSum(after, 'iop_affinity_total', { result: 'hit' }) -
      metricSum(before, 'iop_affinity_total', { result: 'hit' });
    expect(hits).toBeGreaterThanOrEqual(11);
  });

  it('50 concurrent conversations still use both providers, never above capacity at the backends', async () => {
    const fromOllama = chats(ollama).length;
    const fromVllm = chats(vllm).length;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        index % 2 === 0
          ? chat(KEYS.conv, CONV, `conversation ${index}`, { 'x-session-id': `many-${index}` })
          : chat(KEYS.conv, CONV, `conversation ${index} has its own first message`),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(Array.from({ length: 50 }, () => 200));
    const onOllama = chats(ollama, fromOllama);
    const onVllm = chats(vllm, fromVllm);
    // Each dispatch reaches a backend once: 50 runs, plus any retried before its first byte.
    const dispatches = results.reduce((sum, result) => sum + result.attempts, 0);
    expect(onOllama.length + onVllm.length).toBe(dispatches);
    expect(dispatches - 50).toBeLessThanOrEqual(5);
    expect(onOllama.length).toBeGreaterThanOrEqual(10);
    expect(onVllm.length).toBeGreaterThanOrEqual(10);
    expect(peakConcurrency(onOllama)).toBeLessThanOrEqual(4);
    expect(peakConcurrency(onVllm)).toBeLessThanOrEqual(4);
  });
});

describe('fair share between keys', () => {
  it('quiet’s 3 requests during noisy’s 30-request flood wait ≤ 3 s; every noisy request completes', async () => {
    const fromSlow = chats(slow).length;
    const noisy = Array.from({ length: 30 }, (_, index) => chat(KEYS.noisy, SOLO, `noisy ${index}`));
    // The flood is queued (one runs, 29 wait) before quiet arrives.
    await waitUntil(
      async () => (await admin.listProviders()).some((entry) => entry.queued >= 25),
      10_000,
      () => 'noisy queued',
    );
    await sleep(1000);
    const quiet = await Promise.all(
      Array.from({ length: 3 }, (_, index) => chat(KEYS.quiet, SOLO, `quiet ${index}`)),
    );
    expect(quiet.map((result) => result.status)).toEqual([200, 200, 200]);
    const worstQuiet = Math.max(...quiet.map((result) => result.queueMs));
    expect(worstQuiet).toBeLessThanOrEqual(3000);
    const flood = await Promise.all(noisy);
    expect(flood.map((result) => result.status)).toEqual(Array.from({ length: 30 }, () => 200));
    // The noisy requests still queued when quiet arrived waited longer than quiet's worst.
    const worstNoisy = Math.max(...flood.map((result) => result.queueMs));
    expect(worstNoisy).toBeGreaterThan(worstQuiet);
    const served = chats(slow, fromSlow);
    expect(served).toHaveLength(33);
    expect(peakConcurrency(served)).toBe(1);
    await waitUntil(
      async () => (await admin.listProviders()).every((entry) => entry.inFlight === 0 && entry.queued === 0),
      10_000,
      () => 'providers idle',
    );
  });
});
