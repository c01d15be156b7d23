// API keys as principals across the surfaces, in process: the official `openai` client and A2A JSON-RPC over
// HTTP on 127.0.0.1 → the real EdgeService with the governor → a fake node link that reports usage. The
// governor's clock is a ManualClock, so the rolling minute is stepped, not waited for.
import fs from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { toWireRunEvent, type Envelope, type RunEventPart, type RunRequest } from '@iop/wire';
import { createA2AApp } from '../a2a/a2a-app.js';
import { TaskManager } from '../a2a/task-manager.js';
import { createEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import { defaultNodePayload } from '../node/mapper.js';
import { NodeLink } from '../node/node-link.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { FakeChannel, linkInfo } from '../node/test-support/fake-channel.js';
import { closeOpenAIApp, createOpenAIApp } from '../openai/openai-app.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { createEdgeService } from '../service/edge-service.js';
import { openGovernance, type Governance } from './governance.js';
import { ManualClock } from '@iop/clock';
import { TEST_A2A_SETTINGS } from '../a2a/test-support/a2a-settings.js';

const KEYS = {
  modelA: 'sk-only-model-a',
  rpm: 'sk-rpm-5',
  budget: 'sk-budget-100',
  single: 'sk-one-at-a-time',
};

function edgeConfig(dataDir: string): EdgeConfig {
  const result = parseConfigText(
    `
edge: { id: gov-edge, data_dir: "${dataDir}" }
openai:
  enabled: true
  listen: '127.0.0.1:0'
  model_routes:
    - { model: model-a, adapter: cli, target: target-a }
    - { model: model-b, adapter: cli, target: target-b }
  api_keys:
    - { id: only-a, key: ${KEYS.modelA}, models: [model-a] }
    - { id: rpm-5, key: ${KEYS.rpm}, rpm: 5 }
    - { id: budget-100, key: ${KEYS.budget}, token_budget: { tokens: 100, per: day } }
    - { id: single, key: ${KEYS.single}, max_concurrent: 1 }
a2a: { enabled: true, adapter: cli, target: target-a }
nodes:
  - id: node-1
    adapters:
      cli: { profiles: { target-a: { command: fake-a }, target-b: { command: fake-b } } }
`,
    'governance-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

interface Fabric {
  openaiUrl: string;
  a2aUrl: string;
  governance: Governance;
  /** Runs the fake node holds open until released (max_concurrent tests). */
  held: (() => void)[];
  hold: boolean;
  /** RunRequests the fake node received. */
  requests: RunRequest[];
  close(): Promise<void>;
}

/** Usage the fake node reports per run: prompt 30, completion 25 (55 tokens). */
const USAGE = { promptTokens: 30, completionTokens: 25 };

async function startFabric(dataDir: string, clock: ManualClock): Promise<Fabric> {
  const config = edgeConfig(dataDir);
  const registry = createNodeRegistry();
  const events = createEventBus({ replaySize: 0, queueSize: 1000 });
  const channel = new FakeChannel();
  const link = new NodeLink({
    channel,
    info: linkInfo('node-1'),
    payload: defaultNodePayload('node-1'),
    logger: silentLogger,
  });
  registry.add(link);
  const pool = createProviderPool({ config, nodes: registry, events, pollIntervalMs: 20 });
  pool.start();
  const governance = openGovernance({ config, clock, logger: silentLogger });
  const service = createEdgeService({
    registry,
    pool,
    events,
    logger: silentLogger,
    governor: governance.governor,
  });
  const fabric: Fabric = {
    openaiUrl: '',
    a2aUrl: '',
    governance,
    held: [],
    hold: false,
    requests: [],
    close: () => Promise.resolve(),
  };
  channel.onSend((envelope: Envelope) => {
    if (envelope.msg?.$case !== 'runRequest') return;
    const runId = envelope.msg.runRequest.runId;
    fabric.requests.push(envelope.msg.runRequest);
    const parts: RunEventPart[] = [
      { type: 'text-delta', text: 'ok' },
      {
        type: 'usage',
        usage: { ...USAGE, totalTokens: 55, reasoningTokens: 0, cachedTokens: 0, costUsd: 0 },
      },
      { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
    ];
    const emit = () =>
      parts.forEach((part, index) =>
        link.handle({
          requestId: '',
          msg: { $case: 'runEvent', runEvent: toWireRunEvent(runId, index + 1, part) },
        }),
      );
    if (fabric.hold) fabric.held.push(emit);
    else setImmediate(emit);
  });
  const openaiApp = createOpenAIApp({
    config,
    service,
    logger: silentLogger,
    principals: governance.keys.openai,
  });
  const tasks = new TaskManager(
    { ...TEST_A2A_SETTINGS, target: 'target-a' },
    {
      service,
      logger: silentLogger,
      clock,
      newId: () => `id-${Math.random().toString(36).slice(2)}`,
    },
  );
  const a2aApp = createA2AApp({
    path: '/a2a',
    bearerToken: '',
    principals: governance.keys.a2a,
    edgeId: 'gov-edge',
    version: '0.0.0',
    adapter: 'cli',
    target: 'target-a',
    tasks,
    logger: silentLogger,
  });
  const servers: Server[] = [];
  const listen = async (app: RequestListener): Promise<string> => {
    const server = createServer(app);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  fabric.openaiUrl = await listen(openaiApp);
  fabric.a2aUrl = `${await listen(a2aApp)}/a2a`;
  fabric.close = async () => {
    closeOpenAIApp(openaiApp);
    for (const release of fabric.held.splice(0)) release();
    service.shutdown();
    pool.close();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await governance.close();
    events.close();
  };
  return fabric;
}

function client(fabric: Fabric, key: string): OpenAI {
  return new OpenAI({ baseURL: `${fabric.openaiUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
}

async function apiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('expected an API error');
}

const hi = [{ role: 'user' as const, content: 'hi' }];

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function a2aSend(
  fabric: Fabric,
  key: string,
  text: string,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(fabric.a2aUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...extraHeaders },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: `m-${text}`, role: 'user', parts: [{ kind: 'text', text }] },
      },
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('API keys as principals', () => {
  let dir: string;
  let clock: ManualClock;
  let fabric: Fabric;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-governance-'));
    clock = new ManualClock();
    fabric = await startFabric(dir, clock);
  });

  afterEach(async () => {
    await fabric?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a key limited to model A gets 404 model_not_found for model B, and does not see it in /v1/models', async () => {
    const openai = client(fabric, KEYS.modelA);
    const answer = await openai.chat.completions.create({ model: 'model-a', messages: hi });
    expect(answer.choices[0]?.message.content).toBe('ok');
    const error = await apiError(openai.chat.completions.create({ model: 'model-b', messages: hi }));
    expect(error.status).toBe(404);
    expect(error.code).toBe('model_not_found');
    const ids: string[] = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    expect(ids).toEqual(['model-a']);
    expect((await apiError(openai.models.retrieve('model-b'))).status).toBe(404);
    // Another key sees both.
    const all: string[] = [];
    for await (const model of client(fabric, KEYS.rpm).models.list()) all.push(model.id);
    expect(all).toEqual(['model-a', 'model-b']);
  });

  it('rpm 5: the 6th request in a minute gets 429 rate_limited with Retry-After; a minute later it passes', async () => {
    const openai = client(fabric, KEYS.rpm);
    for (let index = 0; index < 5; index += 1) {
      await openai.chat.completions.create({ model: 'model-b', messages: hi });
      clock.advance(1000);
    }
    const error = await apiError(openai.chat.completions.create({ model: 'model-b', messages: hi }));
    expect(error.status).toBe(429);
    expect(error.code).toBe('rate_limited');
    expect(error.headers?.get('retry-after')).toBe('55');
    // Other keys are not affected.
    await client(fabric, KEYS.modelA).chat.completions.create({ model: 'model-a', messages: hi });
    clock.advance(55_000);
    await openai.chat.completions.create({ model: 'model-b', messages: hi });
  });

  it('a 100-token budget is refused once the reported usage passes it, also after a restart', async () => {
    const openai = client(fabric, KEYS.budget);
    await openai.chat.completions.create({ model: 'model-a', messages: hi });
    await openai.chat.completions.create({ model: 'model-a', messages: hi });
    // 2 × 55 = 110 tokens reported ≥ 100.
    const error = await apiError(openai.chat.completions.create({ model: 'model-a', messages: hi }));
    expect(error.status).toBe(429);
    expect(error.code).toBe('budget_exhausted');
    await fabric.close();
    fabric = await startFabric(dir, clock);
    const restarted = await apiError(
      client(fabric, KEYS.budget).chat.completions.create({ model: 'model-a', messages: hi }),
    );
    expect(restarted.code).toBe('budget_exhausted');
    expect(fabric.governance.usage({ by: 'key', sinceMs: 0 })).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ group: 'budget-100', inputTokens: 60, outputTokens: 50, runs: 2 }),
      ]),
    );
  });

  it('max_concurrent 1: of two simultaneous streams one goes through and the other gets 429', async () => {
    fabric.hold = true;
    const openai = client(fabric, KEYS.single);
    // The first stream's run is on the node (held there) before the second request arrives.
    const first = openai.chat.completions.create({ model: 'model-a', messages: hi, stream: true });
    await waitFor(() => fabric.held.length === 1);
    const second = await apiError(
      openai.chat.completions.create({ model: 'model-a', messages: hi, stream: true }),
    );
    expect(second.status).toBe(429);
    expect(second.code).toBe('concurrency_limited');
    expect(second.headers?.get('retry-after')).toBe('1');
    for (const release of fabric.held.splice(0)) release();
    const stream = await first;
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('ok');
    fabric.hold = false;
    await openai.chat.completions.create({ model: 'model-a', messages: hi });
  });

  it('the same key obeys the same limits on A2A, and A2A needs a key when keys are configured', async () => {
    expect((await a2aSend(fabric, 'sk-wrong', 'x')).status).toBe(401);
    const openai = client(fabric, KEYS.rpm);
    for (let index = 0; index < 4; index += 1)
      await openai.chat.completions.create({ model: 'model-a', messages: hi });
    const fifth = await a2aSend(fabric, KEYS.rpm, 'fifth');
    expect(fifth.status).toBe(200);
    expect(fifth.body['result']).toMatchObject({ status: { state: 'completed' } });
    const sixth = await a2aSend(fabric, KEYS.rpm, 'sixth');
    expect(sixth.body['error']).toMatchObject({
      code: -32050,
      data: { code: 'rate_limited', httpStatus: 429, retryAfterSeconds: 60 },
    });
    // A2A runs are recorded under the same key.
    expect(
      fabric.governance.usage({ by: 'surface', sinceMs: 0 }).map((row) => [row.group, row.runs]),
    ).toEqual(
      expect.arrayContaining([
        ['openai', 4],
        ['a2a', 1],
      ]),
    );
  });

  it('usage sums exactly what the backend reported, per key and per model', async () => {
    await client(fabric, KEYS.modelA).chat.completions.create({ model: 'model-a', messages: hi });
    await client(fabric, KEYS.rpm).chat.completions.create({ model: 'model-a', messages: hi });
    await client(fabric, KEYS.rpm).chat.completions.create({ model: 'model-b', messages: hi });
    await apiError(client(fabric, KEYS.modelA).chat.completions.create({ model: 'model-b', messages: hi }));
    const byKey = fabric.governance.usage({ by: 'key', sinceMs: 0 });
    expect(byKey.map((row) => [row.group, row.runs, row.inputTokens, row.outputTokens])).toEqual([
      ['rpm-5', 2, 60, 50],
      ['only-a', 1, 30, 25],
    ]);
    const byModel = fabric.governance.usage({ by: 'model', sinceMs: 0 });
    expect(byModel.map((row) => [row.group, row.inputTokens, row.outputTokens])).toEqual([
      ['model-a', 60, 50],
      ['model-b', 30, 25],
    ]);
  });

  it('no side route: a background response and an A2A task are invisible to another key', async () => {
    const owner = client(fabric, KEYS.rpm);
    const queued = await owner.responses.create({ model: 'model-a', input: 'hi', background: true });
    await waitFor(() => fabric.governance.usage({ by: 'key', sinceMs: 0 }).length > 0);
    expect((await owner.responses.retrieve(queued.id)).id).toBe(queued.id);
    const other = await apiError(client(fabric, KEYS.single).responses.retrieve(queued.id));
    expect(other.status).toBe(404);
    const sent = await a2aSend(fabric, KEYS.rpm, 'task');
    const taskId = (sent.body['result'] as { id: string }).id;
    for (const method of ['tasks/get', 'tasks/resubscribe']) {
      const response = await fetch(fabric.a2aUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.single}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method, params: { id: taskId } }),
      });
      expect(await response.text()).toContain('-32001');
    }
  });

  it('key changes apply live: a removed key is refused, a new one works without a restart', async () => {
    const next = parseConfigText(
      `
edge: { data_dir: "${dir}" }
openai:
  model_routes: [{ model: model-a, adapter: cli, target: target-a }]
  api_keys: [{ id: fresh, key: sk-fresh }]
nodes: [{ id: node-1, adapters: { cli: { profiles: { target-a: { command: fake-a } } } } }]
`,
      'next.yaml',
    );
    if (!next.ok) throw new Error(JSON.stringify(next.issues));
    fabric.governance.applyConfig(next.config);
    expect((await apiError(client(fabric, KEYS.rpm).models.list())).status).toBe(401);
    await client(fabric, 'sk-fresh').chat.completions.create({ model: 'model-a', messages: hi });
  });

  it("passes a caller's traceparent from OpenAI and A2A to the node when the edge does not trace", async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const openai = new OpenAI({
      baseURL: `${fabric.openaiUrl}/v1`,
      apiKey: KEYS.rpm,
      maxRetries: 0,
      defaultHeaders: { traceparent },
    });
    await openai.chat.completions.create({ model: 'model-a', messages: hi });
    await a2aSend(fabric, KEYS.rpm, 'traced', { traceparent });
    expect(fabric.requests.map((request) => request.traceparent)).toEqual([traceparent, traceparent]);
  });
});
