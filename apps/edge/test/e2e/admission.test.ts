// Cross-process end to end of the one admission path (issue 13): a real edge (`iop-edge console`, so the console,
// OpenAI, A2A and admin surfaces share one process) and two real `iop-node run` processes over fake inference
// servers.
//   1. The official `openai` client sends 24 concurrent chats to a model served by two providers (capacity 4
//      each) on node n1 whose max_concurrency is 4: every answer is 200 or 429 with Retry-After — never 502 —
//      and the backends never see more than 4 requests of n1 at once.
//   2. An A2A `message/stream` task on n2's provider of capacity 1 holds that provider (`nodes list --json`
//      shows in_flight 1, then 0) while an OpenAI request for the same model waits (x-iop-queue-ms).
//   3. OpenAI (streams and aborts), A2A and console runs mixed, with n2 killed and restarted mid-way: afterwards
//      every provider's in_flight and queued are 0 and no run is left open on either node.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer, RecordedRequest } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  runEdgeCommand,
  runNodeCommand,
  sleep,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
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
import { startFakeBackends, waitForProvidersReady, stopFabric } from '../support/fabric-setup.js';

jest.setTimeout(90_000);

const DUAL = 'dual-model';
const SOLO = 'solo-model';

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let n1: TestProcess;
let n2: TestProcess;
let n2DataDir: string;
let n1DataDir: string;
let admin: AdminClient;
let client: OpenAI;

function admissionConfig(dataDir: string): Record<string, unknown> {
  const base = fabricConfig({
    dataDir,
    nodes: [
      { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4, maxQueue: 8, maxConcurrency: 4 },
      { id: 'n2', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 1, maxQueue: 3 },
    ],
  });
  return {
    ...base,
    models: [
      {
        id: DUAL,
        providers: { [ollamaProviderId('n1')]: OLLAMA_SERVED, [vllmProviderId('n1')]: VLLM_SERVED },
      },
      { id: SOLO, providers: { [vllmProviderId('n2')]: VLLM_SERVED } },
    ],
    // A2A runs on n2's vLLM provider: the same capacity the `solo-model` requests use.
    a2a: {
      enabled: true,
      listen: '127.0.0.1:0',
      node: 'n2',
      adapter: 'vllm',
      target: VLLM_SERVED,
      timeout_sec: 60,
    },
    console: { node: 'n2', adapter: 'vllm', target: VLLM_SERVED, session_id: 'console' },
  };
}

const chatPaths = new Set(['/api/chat', '/v1/chat/completions']);

function chatRequests(server: FakeServer, from: number): RecordedRequest[] {
  return server.requests.slice(from).filter((request) => chatPaths.has(request.path));
}

async function providersIdle(): Promise<boolean> {
  const providers = await admin.listProviders();
  return providers.every((provider) => provider.inFlight === 0 && provider.queued === 0);
}

interface NodesListEntry {
  node_id: string;
  providers: { provider_id: string; in_flight: number }[];
}

async function nodesListJson(): Promise<NodesListEntry[]> {
  const result = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', edge.addresses.admin]);
  expect(result.status.code).toBe(0);
  return (JSON.parse(result.stdout) as { nodes: NodesListEntry[] }).nodes;
}

function inFlightOf(list: NodesListEntry[], providerId: string): number | undefined {
  for (const node of list) {
    const provider = node.providers.find((entry) => entry.provider_id === providerId);
    if (provider) return provider.in_flight;
  }
  return undefined;
}

let rpcId = 0;
function a2aMessage(text: string, method: string, extra: Record<string, unknown> = {}): string {
  rpcId += 1;
  return JSON.stringify({
    jsonrpc: '2.0',
    id: rpcId,
    method,
    params: {
      message: { kind: 'message', messageId: `m-${rpcId}`, role: 'user', parts: [{ kind: 'text', text }] },
      ...extra,
    },
  });
}

function a2aUrl(): string {
  return `http://${edge.addresses.a2a}/a2a`;
}

function startNode(nodeId: string, dataDir: string): TestProcess {
  return startNodeProcess(group, { edge: edge.addresses.transport, nodeId, token: FABRIC_TOKEN, dataDir });
}

async function runsLeftOpen(nodeId: string, dataDir: string): Promise<number> {
  const history = await runNodeCommand(group, [
    'history',
    '--data-dir',
    dataDir,
    '--json',
    '--limit',
    '1000',
  ]);
  expect(history.status.code).toBe(0);
  const runs = JSON.parse(history.stdout) as { status: string }[];
  expect(runs.length).toBeGreaterThan(0);
  return runs.filter((run) => run.status === 'running').length;
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends({ tokenDelayMs: 25 }));
  const dir = await group.tempDir('iop-e2e-admission-');
  edge = await startEdgeProcess(group, dir, admissionConfig(`${dir}/data`), 'edge', 'console');
  n1DataDir = await group.tempDir('iop-e2e-admission-n1-');
  n2DataDir = await group.tempDir('iop-e2e-admission-n2-');
  n1 = startNode('n1', n1DataDir);
  n2 = startNode('n2', n2DataDir);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${n1.describe()}\n${n2.describe()}\n${edge.describe()}`, 40_000);
  client = new OpenAI({
    baseURL: `${edge.addresses.openai}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 30_000,
  });
}, 120_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('one admission path, every surface', () => {
  it('24 concurrent chats on two providers of one node with max_concurrency 4: only 200 or 429, never more than 4 at the backend', async () => {
    const fromOllama = ollama.requests.length;
    const fromVllm = vllm.requests.length;
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, index) =>
        client.chat.completions
          .create({ model: DUAL, messages: [{ role: 'user', content: `load ${index}` }] })
          .withResponse()
          .then(({ response }) => ({ status: response.status, retryAfter: null as string | null }))
          .catch((error: unknown) => {
            if (error instanceof OpenAI.APIError) {
              const headers = error.headers as Headers | undefined;
              return { status: Number(error.status), retryAfter: headers?.get('retry-after') ?? null };
            }
            throw error;
          }),
      ),
    );
    const statuses = results.map((result) => result.status);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    // 4 run, 16 wait (max_queue 8 per provider), the rest are refused at once.
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(20);
    for (const refused of results.filter((result) => result.status === 429))
      expect(refused.retryAfter).toBe('1');
    const seen = [...chatRequests(ollama, fromOllama), ...chatRequests(vllm, fromVllm)];
    expect(seen.length).toBe(statuses.filter((status) => status === 200).length);
    expect(peakConcurrency(seen)).toBeLessThanOrEqual(4);
    expect(peakConcurrency(seen)).toBeGreaterThanOrEqual(2);
    await waitUntil(providersIdle, 10_000, 'providers idle after the burst');
  });

  it('an A2A stream holds its provider (nodes list --json shows in_flight 1, then 0); an OpenAI request for the model queues behind it', async () => {
    // 8 tokens × 1 s: long enough for a `nodes list` process to look while the task runs, even on a busy machine.
    vllm.setBehavior({ tokenDelayMs: 1000 });
    try {
      const controller = new AbortController();
      const stream = await fetch(a2aUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: a2aMessage('hold the provider', 'message/stream'),
        signal: controller.signal,
      });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toContain('text/event-stream');
      const reader = (stream.body as ReadableStream<Uint8Array> | null)?.getReader();
      await waitUntil(
        async () =>
          (await admin.listProviders()).some(
            (p) => p.providerId === vllmProviderId('n2') && p.inFlight === 1,
          ),
        10_000,
        'the A2A run holding the provider',
      );
      expect(inFlightOf(await nodesListJson(), vllmProviderId('n2'))).toBe(1);
      const started = Date.now();
      const { response } = await client.chat.completions
        .create({ model: SOLO, messages: [{ role: 'user', content: 'after a2a' }] })
        .withResponse();
      expect(response.status).toBe(200);
      const queueMs = Number(response.headers.get('x-iop-queue-ms'));
      expect(queueMs).toBeGreaterThan(100);
      expect(Date.now() - started).toBeGreaterThan(queueMs);
      // The A2A task finished first (FIFO behind it); drain the stream to its final event.
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        text += decoder.decode(chunk.value);
      }
      expect(text).toContain('"final":true');
      expect(text).toContain('"state":"completed"');
      await waitUntil(
        async () => inFlightOf(await nodesListJson(), vllmProviderId('n2')) === 0,
        10_000,
        'in_flight 0',
      );
    } finally {
      vllm.setBehavior({ tokenDelayMs: 25 });
    }
  });

  it('A2A answers a full provider queue with the JSON-RPC capacity error and Retry-After', async () => {
    vllm.setBehavior({ tokenDelayMs: 100 });
    try {
      // n2's provider: capacity 1, max_queue 3. Hold it and fill its queue with OpenAI requests.
      const held = Array.from({ length: 4 }, (_, index) =>
        client.chat.completions.create({
          model: SOLO,
          messages: [{ role: 'user', content: `fill ${index}` }],
        }),
      );
      await waitUntil(
        async () =>
          (await admin.listProviders()).some((p) => p.providerId === vllmProviderId('n2') && p.queued === 3),
        10_000,
        'queue full',
      );
      const refused = await fetch(a2aUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: a2aMessage('one too many', 'message/send'),
      });
      expect(refused.headers.get('retry-after')).toBe('1');
      const body = (await refused.json()) as {
        error?: { code: number; data?: { code: string; httpStatus: number } };
      };
      expect(body.error).toMatchObject({ code: -32050, data: { code: 'queue_full', httpStatus: 429 } });
      await Promise.all(held);
      await waitUntil(providersIdle, 20_000, 'providers idle');
    } finally {
      vllm.setBehavior({ tokenDelayMs: 25 });
    }
  });

  it('mixed OpenAI, A2A and console runs with client aborts and a node restart leave nothing held or open', async () => {
    const input = edge.child.stdin;
    if (!input) throw new Error('the console process has no stdin');
    input.write('/background on\n');
    const aborts: AbortController[] = [];
    const openaiRuns = Array.from({ length: 16 }, (_, index) => {
      const controller = new AbortController();
      if (index % 4 === 0) aborts.push(controller);
      const model = index % 2 === 0 ? DUAL : SOLO;
      return index % 3 === 0
        ? (async () => {
            const stream = await client.chat.completions.create(
              { model, stream: true, messages: [{ role: 'user', content: `mix ${index}` }] },
              { signal: controller.signal },
            );
            for await (const _chunk of stream) {
              // read to the end (or to the abort)
            }
          })()
        : client.chat.completions.create(
            { model, messages: [{ role: 'user', content: `mix ${index}` }] },
            { signal: controller.signal },
          );
    });
    const a2aRuns = Array.from({ length: 4 }, (_, index) =>
      fetch(a2aUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: a2aMessage(`a2a mix ${index}`, 'message/send', {
          configuration: { blocking: index % 2 === 0 },
        }),
      }).then((response) => response.text()),
    );
    for (let index = 0; index < 3; index += 1) input.write(`console mix ${index}\n`);
    await sleep(150);
    for (const controller of aborts) controller.abort();
    // Kill n2 while its runs are in flight, then bring it back.
    await n2.stop('SIGKILL');
    n2 = startNode('n2', n2DataDir);
    const settled = await Promise.allSettled([...openaiRuns, ...a2aRuns]);
    const unexpected = settled.flatMap((outcome) => {
      if (outcome.status === 'fulfilled') return [];
      const error = outcome.reason as { name?: string; status?: number; message?: string };
      // A client abort, or a run that was on the killed node: a well-formed error, never a hang.
      const expected =
        error.name === 'AbortError' ||
        error.name === 'APIUserAbortError' ||
        /aborted/i.test(error.message ?? '') ||
        (typeof error.status === 'number' && [429, 502, 503].includes(error.status));
      return expected ? [] : [`${error.name ?? '?'} ${error.status ?? ''} ${error.message ?? ''}`];
    });
    expect(unexpected).toEqual([]);
    await waitUntil(
      async () => (await admin.listProviders()).every((entry) => entry.status === 'ready'),
      30_000,
      () => `providers ready after restart\n${n2.describe()}`,
    );
    await waitUntil(
      providersIdle,
      20_000,
      async () => `idle providers: ${JSON.stringify(await admin.listProviders())}`,
    );
    await waitUntil(
      () => /\[\w+-evt\]|sent run_id=/.test(edge.stdout()),
      10_000,
      () => `console runs\n${edge.describe()}`,
    );
    expect(edge.stdout()).toMatch(/sent run_id=\S+ node=n2 adapter=vllm/);
    // Nothing left open on either node: n1 finished everything; n2's killed runs are `interrupted`, not `running`.
    await ollama.waitForIdle(10_000);
    await vllm.waitForIdle(10_000);
    expect(await runsLeftOpen('n1', n1DataDir)).toBe(0);
    expect(await runsLeftOpen('n2', n2DataDir)).toBe(0);
    const metrics = await fetch(
      `${edge.addresses.metrics.startsWith('http') ? '' : 'http://'}${edge.addresses.metrics}/metrics`,
    );
    const text = await metrics.text();
    for (const surface of ['openai', 'a2a', 'console']) {
      expect(text).toMatch(new RegExp(`iop_runs_admitted_total\\{surface="${surface}"\\} [1-9]`));
    }
  });
});
