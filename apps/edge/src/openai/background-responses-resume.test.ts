// A background response an earlier edge process left `queued` is placed again by the next one (issue 44, restart
// semantics): the app is built over a registry restored from a record store, as the edge does at start.
import { afterEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import type { RunKey } from '../placement/run-directory.js';
import { RunRegistry } from '../service/run-registry.js';
import { MemoryRunRecordStore } from '../service/test-support/memory-run-record-store.js';
import {
  eventually,
  harnessFabric,
  type ServedListener,
} from '../surface-kit/test-support/surface-harness.js';
import { echoScripter, type FakeRun } from '../test-support/fake-edge-service.js';
import { createOpenAIApp } from './openai-app.js';
import { serveHarnessApp } from './test-support/openai-harness.js';

const KEY = 'sk-team-0123456789abcdef';
const KEYS = `  api_keys:\n    - { id: team, key: ${KEY}, models: [pooled] }`;
const TIMEOUT_MS = 30_000; // the harness's openai.timeout_sec

type Body = Record<string, unknown>;

let served: ServedListener | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const responseKey = (id: string, principal = 'team'): RunKey => ({ principal, kind: 'openai.response', id });

/** A record as the previous process left it: queued, with the request to place again. */
function leftQueued(
  store: MemoryRunRecordStore,
  id: string,
  options: { principal?: string; submittedAtMs: number; resume?: unknown; model?: string },
): void {
  const model = options.model ?? 'pooled';
  store.save({
    key: responseKey(id, options.principal ?? 'team'),
    state: { id, object: 'response', created_at: 1_700_000_000, status: 'queued', model, background: true },
    createdAt: options.submittedAtMs,
    updatedAt: options.submittedAtMs,
    endedAt: undefined,
    edgeId: 'edge-before',
    boot: 'boot-before',
    resume:
      'resume' in options
        ? options.resume
        : {
            v: 1,
            submittedAtMs: options.submittedAtMs,
            request: { model, input: `resume ${id}`, background: true },
            affinityKey: 'conversation-7',
          },
  });
}

/** The next edge process: a registry restored from `store`, the app built over it (which resumes), served. */
async function restart(
  store: MemoryRunRecordStore,
  clock: ManualClock,
  options: { keys?: string; connected?: boolean } = {},
) {
  const fabric = harnessFabric({ openai: options.keys ?? KEYS, scripter: echoScripter });
  if (options.connected === false) {
    fabric.nodes.disconnect('node-1');
    fabric.nodes.disconnect('node-2');
  }
  const registry = new RunRegistry({ clock, store, origin: { edgeId: 'edge-after', boot: 'boot-after' } });
  registry.restore();
  fabric.service.runRegistry = registry;
  const app = createOpenAIApp({
    config: fabric.config,
    service: fabric.service,
    logger: silentLogger,
    clock,
  });
  served = await serveHarnessApp(app, fabric.pool);
  const state = async (id: string, principal = 'team'): Promise<Body | undefined> =>
    (await registry.get(responseKey(id, principal)))?.state as Body | undefined;
  return { ...fabric, registry, url: served.url, state };
}

/** Lets the promise chains a timer started run (the provider wait's next attempt). */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('background responses placed again after an edge restart', () => {
  it('records the request while queued (never in GET) and clears it once the response is dispatched', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    const fabric = harnessFabric({ openai: KEYS, capacityA: 1, capacityB: 1, queueTimeoutMs: 10_000 });
    const blockers: FakeRun[] = [];
    fabric.service.script = (run) => {
      if (blockers.length < 2) blockers.push(run);
      else for (const part of echoParts(run)) run.emit(part);
    };
    fabric.service.runRegistry = new RunRegistry({ clock, store });
    const app = createOpenAIApp({
      config: fabric.config,
      service: fabric.service,
      logger: silentLogger,
      clock,
    });
    served = await serveHarnessApp(app, fabric.pool);
    const post = (input: string) =>
      postResponse(served?.url ?? '', { model: 'pooled', input, background: true });
    await post('one');
    await post('two');
    const queued = await post('three');
    const id = String(queued['id']);
    await eventually(() => expect(blockers).toHaveLength(2));
    expect(store.find(responseKey(id))?.resume).toMatchObject({
      v: 1,
      submittedAtMs: clock.now(),
      request: { model: 'pooled', input: 'three', background: true },
    });
    const polled = await getResponse(served.url, id);
    expect(polled['status']).toBe('queued');
    expect(JSON.stringify(polled)).not.toContain('submittedAtMs');

    blockers[0]?.emit({ type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 });
    await eventually(async () =>
      expect((await getResponse(served?.url ?? '', id))['status']).toBe('completed'),
    );
    expect(store.find(responseKey(id))?.resume).toBeUndefined();
  });

  it('places a response left queued again under its id: queued, then completed, as its key, with its context', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_q', { submittedAtMs: clock.now() - 10_000 });
    const edge = await restart(store, clock);
    await eventually(async () => expect((await edge.state('resp_q'))?.['status']).toBe('completed'));
    const submitted = edge.service.submitted[0];
    expect(submitted?.messages.at(-1)?.content).toBe('resume resp_q');
    expect(submitted?.principal?.id).toBe('team');
    expect(submitted?.affinityKey).toBe('conversation-7');
    // What was left of the deadline: 30 s counted from the submission 10 s before the restart.
    expect(submitted?.timeoutMs).toBe(TIMEOUT_MS - 10_000);
    const body = await getResponse(edge.url, 'resp_q');
    expect(body).toMatchObject({
      id: 'resp_q',
      status: 'completed',
      created_at: 1_700_000_000,
      background: true,
    });
    expect(store.find(responseKey('resp_q'))?.resume).toBeUndefined();
  });

  it('ends the response failed naming the deadline when it passed during the restart', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_late', { submittedAtMs: clock.now() - TIMEOUT_MS - 1 });
    const edge = await restart(store, clock);
    await eventually(async () => expect((await edge.state('resp_late'))?.['status']).toBe('failed'));
    const failed = await edge.state('resp_late');
    expect(failed?.['error']).toMatchObject({ code: 'run_timeout' });
    expect(String((failed?.['error'] as Body)['message'])).toContain('30000 ms deadline');
    expect(edge.service.submitted).toHaveLength(0);
  });

  it('waits for a provider while the nodes reconnect, then runs', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_wait', { submittedAtMs: clock.now() });
    const edge = await restart(store, clock, { connected: false });
    await settle();
    expect((await edge.state('resp_wait'))?.['status']).toBe('queued');
    clock.advance(1_000);
    await settle();
    expect((await edge.state('resp_wait'))?.['status']).toBe('queued');
    edge.nodes.connect('node-1');
    edge.nodes.connect('node-2');
    clock.advance(2_000);
    await eventually(async () => expect((await edge.state('resp_wait'))?.['status']).toBe('completed'));
    // The wait counted against the deadline.
    expect(edge.service.submitted[0]?.timeoutMs).toBe(TIMEOUT_MS - 3_000);
  });

  it('stops waiting for a provider at the deadline and names it', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_never', { submittedAtMs: clock.now() - 25_000 });
    const edge = await restart(store, clock, { connected: false });
    for (let step = 0; step < 10; step += 1) {
      clock.advance(1_000);
      await settle();
    }
    await eventually(async () => expect((await edge.state('resp_never'))?.['status']).toBe('failed'));
    expect((await edge.state('resp_never'))?.['error']).toMatchObject({ code: 'run_timeout' });
  });

  it('cancels a re-placed response that waits for a provider', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_cancel', { submittedAtMs: clock.now() });
    const edge = await restart(store, clock, { connected: false });
    const response = await fetch(`${edge.url}/v1/responses/resp_cancel/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as Body)['status']).toBe('cancelled');
    edge.nodes.connect('node-1');
    clock.advance(5_000);
    await settle();
    expect((await edge.state('resp_cancel'))?.['status']).toBe('cancelled');
    expect(edge.service.submitted).toHaveLength(0);
  });

  it('ends it failed, naming why, when its key is gone, no longer allowed the model, or keys appeared', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_gone', { principal: 'gone', submittedAtMs: clock.now() });
    leftQueued(store, 'resp_model', { submittedAtMs: clock.now(), model: 'llama3' });
    leftQueued(store, 'resp_anon', { principal: '', submittedAtMs: clock.now() });
    const edge = await restart(store, clock);
    expect((await edge.state('resp_gone', 'gone'))?.['error']).toMatchObject({
      code: 'invalid_api_key',
      message: expect.stringContaining("The API key 'gone'") as unknown,
    });
    expect((await edge.state('resp_model'))?.['error']).toMatchObject({
      code: 'model_not_found',
      message: expect.stringContaining("no longer allowed the model 'llama3'") as unknown,
    });
    expect((await edge.state('resp_anon', ''))?.['error']).toMatchObject({ code: 'invalid_api_key' });
    expect(edge.service.submitted).toHaveLength(0);
  });

  it('places an anonymous response again while the listener is still open', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_open', { principal: '', submittedAtMs: clock.now() });
    const edge = await restart(store, clock, { keys: '' });
    await eventually(async () => expect((await edge.state('resp_open', ''))?.['status']).toBe('completed'));
    expect(edge.service.submitted[0]?.principal).toBeUndefined();
  });

  it('ends a response whose payload it cannot read as edge_restarted', async () => {
    const clock = new ManualClock(Date.now());
    const store = new MemoryRunRecordStore();
    leftQueued(store, 'resp_v9', { submittedAtMs: clock.now(), resume: { v: 9, whatever: true } });
    const edge = await restart(store, clock);
    expect((await edge.state('resp_v9'))?.['error']).toMatchObject({ code: 'edge_restarted' });
    expect(edge.service.submitted).toHaveLength(0);
  });
});

function echoParts(run: FakeRun) {
  return echoScripter(run.input).parts;
}

async function postResponse(url: string, body: Body): Promise<Body> {
  const response = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Body;
  if (response.status !== 200) throw new Error(`POST /v1/responses: ${JSON.stringify(answer)}`);
  return answer;
}

async function getResponse(url: string, id: string): Promise<Body> {
  const response = await fetch(`${url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
  return (await response.json()) as Body;
}
