import { describe, it, expect } from '@jest/globals';
import {
  CancelAction,
  create,
  principalDigest,
  RunKind,
  toWireRunEvent,
  type Envelope,
  type RunEventPart,
} from '@iop/wire';
import { createEventBus } from '../events/event-bus.js';
import type { EdgeEvent } from '../events/types.js';
import { silentLogger } from '../logging.js';
import { defaultNodePayload } from '../node/mapper.js';
import { NodeLink } from '../node/node-link.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { FakeChannel, linkInfo } from '../node/test-support/fake-channel.js';
import { createEdgeService, type EdgeServiceDeps } from './edge-service.js';
import { ServiceError } from './errors.js';
import type { PoolConfig } from '../pool/provider-pool.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { modelConfig, nodeConfig, providerConfig } from '../pool/test-support/pool-fixture.js';
import { systemClock } from '../clock.js';
import type { AdmissionRequest, Governor, RunEnd } from '../governance/governor.js';
import { unlimitedPrincipal } from '../governance/principal.js';
import type { EdgeService, RunEventWithMeta, RunSpec } from './types.js';

/** The flat shape these tests write runs in: an explicit route with a fixed session. */
interface SubmitRunInput extends Omit<RunSpec, 'session'> {
  node?: string;
  adapter: string;
  target: string;
  sessionId: string;
  signal?: AbortSignal;
}

function submit(service: EdgeService, input: SubmitRunInput) {
  const { node, adapter, target, sessionId, signal, ...spec } = input;
  return service.submitRun(
    { kind: 'route', ...(node !== undefined ? { node } : {}), adapter, target },
    { ...spec, session: { kind: 'fixed', sessionId } },
    { surface: 'console', ...(signal ? { signal } : {}) },
  );
}

function setup(
  nodes: { id: string; alias?: string; runKinds?: RunKind[] }[] = [{ id: 'n1' }],
  overrides: Partial<EdgeServiceDeps> = {},
  poolConfig: PoolConfig = { models: [], nodes: [] },
) {
  const registry = createNodeRegistry();
  const bus = createEventBus({ replaySize: 1000, queueSize: 1000 });
  const channels = new Map<string, FakeChannel>();
  const links = new Map<string, NodeLink>();
  for (const node of nodes) {
    const channel = new FakeChannel();
    const link = new NodeLink({
      channel,
      info: linkInfo(node.id, { alias: node.alias ?? node.id, runKinds: node.runKinds ?? [] }),
      payload: defaultNodePayload(node.id),
      logger: silentLogger,
    });
    registry.add(link);
    channels.set(node.id, channel);
    links.set(node.id, link);
  }
  let counter = 0;
  const pool = createProviderPool({ config: poolConfig, nodes: registry, events: bus, pollIntervalMs: 20 });
  pool.start();
  const service = createEdgeService({
    registry,
    pool,
    events: bus,
    logger: silentLogger,
    generateRunId: () => `run-${++counter}`,
    ...overrides,
  });
  const busEvents: EdgeEvent[] = [];
  const subscription = bus.subscribe();
  void (async () => {
    for await (const event of subscription) busEvents.push(event);
  })();
  const emit = (nodeId: string, runId: string, seq: number, part: RunEventPart) =>
    links
      .get(nodeId)
      ?.handle({ requestId: '', msg: { $case: 'runEvent', runEvent: toWireRunEvent(runId, seq, part, 42) } });
  return {
    registry,
    bus,
    pool,
    service,
    channels,
    links,
    busEvents,
    emit,
    close: () => {
      subscription.close();
      pool.close();
    },
  };
}

function runInput(overrides: Partial<SubmitRunInput> = {}): SubmitRunInput {
  return {
    adapter: 'cli',
    target: 'fake-cli',
    sessionId: 'default',
    messages: [create.chatMessage({ role: 'user', content: 'hello' })],
    ...overrides,
  };
}

async function collect(iterable: AsyncIterable<RunEventWithMeta>): Promise<RunEventWithMeta[]> {
  const events: RunEventWithMeta[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('createEdgeService run kinds', () => {
  const embedding = { kind: RunKind.RUN_KIND_EMBEDDING, embedding: { inputs: ['a', 'b'] }, messages: [] };

  it('refuses an embedding run for a node that did not announce the kind, sending nothing', async () => {
    const h = setup([{ id: 'n1' }]);
    const error = await submit(h.service, runInput(embedding)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe('node_error');
    expect((error as ServiceError).message).toMatch(/does not run embedding requests: upgrade iop-node/);
    expect(h.channels.get('n1')?.ofKind('runRequest')).toHaveLength(0);
    expect(h.service.inFlightRuns).toBe(0);
    expect(h.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    h.close();
  });

  it('sends the kind and its input to a node that runs it, without messages', async () => {
    const h = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_EMBEDDING] }]);
    const handle = await submit(h.service, runInput(embedding));
    const sent = h.channels.get('n1')?.ofKind('runRequest')[0]?.msg;
    expect(sent).toMatchObject({
      runRequest: { kind: RunKind.RUN_KIND_EMBEDDING, embedding: { inputs: ['a', 'b'] }, messages: [] },
    });
    h.emit('n1', handle.runId, 1, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
    await handle.done;
    h.close();
  });

  it('refuses a completion run for a node that announced only embedding, and sends it to one that runs it', async () => {
    const completion = {
      kind: RunKind.RUN_KIND_COMPLETION,
      completion: { prompt: 'once upon', suffix: '' },
      messages: [],
    };
    const older = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_EMBEDDING] }]);
    const error = await submit(older.service, runInput(completion)).catch((caught: unknown) => caught);
    expect((error as ServiceError).code).toBe('node_error');
    expect((error as ServiceError).message).toMatch(
      /does not run text completion requests: upgrade iop-node/,
    );
    expect(older.channels.get('n1')?.ofKind('runRequest')).toHaveLength(0);
    expect(older.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    older.close();
    const newer = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_COMPLETION, RunKind.RUN_KIND_EMBEDDING] }]);
    const handle = await submit(newer.service, runInput(completion));
    expect(newer.channels.get('n1')?.ofKind('runRequest')[0]?.msg).toMatchObject({
      runRequest: { kind: RunKind.RUN_KIND_COMPLETION, completion: { prompt: 'once upon' }, messages: [] },
    });
    newer.emit('n1', handle.runId, 1, {
      type: 'complete',
      detail: 'stop',
      finishReason: 'stop',
      backendMs: 1,
    });
    await handle.done;
    newer.close();
  });

  it('refuses a run with fields an older node would ignore, and sends it to a newer node', async () => {
    const older = setup([{ id: 'n1' }]);
    const fields = { params: create.generationParams({ seed: 7 }) };
    const error = await submit(older.service, runInput(fields)).catch((caught: unknown) => caught);
    expect((error as ServiceError).code).toBe('node_error');
    expect((error as ServiceError).message).toMatch(/predates 'seed'/);
    expect(older.channels.get('n1')?.ofKind('runRequest')).toHaveLength(0);
    older.close();
    const newer = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_EMBEDDING] }]);
    const handle = await submit(newer.service, runInput({ ...fields, extraBodyJson: '{"top_k":2}' }));
    expect(newer.channels.get('n1')?.ofKind('runRequest')[0]?.msg).toMatchObject({
      runRequest: { params: { seed: 7 }, extraBodyJson: '{"top_k":2}' },
    });
    newer.emit('n1', handle.runId, 1, {
      type: 'complete',
      detail: 'stop',
      finishReason: 'stop',
      backendMs: 1,
    });
    await handle.done;
    newer.close();
  });

  it('refuses image URLs for an older node, and sends them with fetch_image_urls to a newer one', async () => {
    const messages = [create.chatMessage({ role: 'user', imageUrls: ['https://a.example/x.png'] })];
    const older = setup([{ id: 'n1' }]);
    const error = await submit(older.service, runInput({ messages })).catch((caught: unknown) => caught);
    expect((error as ServiceError).code).toBe('node_error');
    expect((error as ServiceError).message).toMatch(/predates 'image_url/);
    expect(older.channels.get('n1')?.ofKind('runRequest')).toHaveLength(0);
    older.close();
    const newer = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_EMBEDDING] }]);
    const handle = await submit(newer.service, runInput({ messages, fetchImageUrls: true }));
    expect(newer.channels.get('n1')?.ofKind('runRequest')[0]?.msg).toMatchObject({
      runRequest: { messages: [{ imageUrls: ['https://a.example/x.png'] }], fetchImageUrls: true },
    });
    newer.emit('n1', handle.runId, 1, {
      type: 'complete',
      detail: 'stop',
      finishReason: 'stop',
      backendMs: 1,
    });
    await handle.done;
    newer.close();
  });

  it('refuses an embedding run without inputs', async () => {
    const h = setup([{ id: 'n1', runKinds: [RunKind.RUN_KIND_EMBEDDING] }]);
    const error = await submit(h.service, runInput({ ...embedding, embedding: { inputs: [] } })).catch(
      (caught: unknown) => caught,
    );
    expect((error as ServiceError).code).toBe('invalid_request');
    h.close();
  });
});

describe('createEdgeService runs', () => {
  it("measures a run's overhead on the clock's monotonic scale, not rounded to whole milliseconds", async () => {
    // Epoch milliseconds that tick in whole ms, and a monotonic clock with the sub-millisecond truth.
    let epoch = 1_000;
    let monotonic = 20.25;
    const h = setup([{ id: 'n1' }], {
      clock: { ...systemClock, now: () => epoch, monotonicNow: () => monotonic },
    });
    const handle = await submit(h.service, runInput({}));
    const reading = collect(handle.events);
    h.emit('n1', 'run-1', 1, { type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' });
    epoch = 1_011;
    monotonic = 30.85;
    h.emit('n1', 'run-1', 2, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 10.2 });
    await reading;
    await handle.done;
    expect(handle.overheadMs()).toBeCloseTo(0.4, 6);
    h.close();
  });

  it('sends the run request, streams its events to the handle and the bus, and releases it at the end', async () => {
    let now = 1_000;
    const h = setup([{ id: 'n1' }], { clock: { ...systemClock, now: () => now, monotonicNow: () => now } });
    const handle = await submit(
      h.service,
      runInput({ workspace: '/w', metadata: { a: 'b' }, timeoutMs: 60_000 }),
    );
    expect(handle).toMatchObject({ runId: 'run-1', nodeId: 'n1' });
    const sent = h.channels.get('n1')?.ofKind('runRequest')[0]?.msg;
    expect(sent).toMatchObject({
      runRequest: {
        runId: 'run-1',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        background: false,
        workspace: '/w',
        timeoutMs: 60_000,
        metadata: { a: 'b' },
      },
    });
    expect(h.service.inFlightRuns).toBe(1);
    const reading = collect(handle.events);
    h.emit('n1', 'run-1', 1, { type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' });
    h.emit('n1', 'run-1', 2, { type: 'text-delta', text: 'HELLO_OK\n' });
    now = 1_500;
    h.emit('n1', 'run-1', 3, {
      type: 'complete',
      detail: 'idle-timeout',
      finishReason: 'stop',
      backendMs: 400,
    });
    const events = await reading;
    expect(events.map((event) => [event.seq, event.part.type])).toEqual([
      [1, 'start'],
      [2, 'text-delta'],
      [3, 'complete'],
    ]);
    expect(events.every((event) => event.runId === 'run-1' && event.nodeId === 'n1')).toBe(true);
    await expect(handle.done).resolves.toEqual({
      status: 'completed',
      detail: 'idle-timeout',
      finishReason: 'stop',
    });
    expect(handle.overheadMs()).toBe(100);
    expect(h.service.inFlightRuns).toBe(0);
    expect(h.links.get('n1')?.inFlightRuns).toBe(0);
    await settle();
    expect(h.busEvents.filter((event) => event.type === 'run')).toHaveLength(3);
    h.close();
  });

  it('cancels on the node and ends with the node-confirmed cancelled part', async () => {
    const h = setup();
    const handle = await submit(h.service, runInput());
    await handle.cancel('user');
    await handle.cancel('again');
    const cancels = h.channels.get('n1')?.ofKind('cancelRequest') ?? [];
    expect(cancels).toHaveLength(1);
    expect(cancels[0]?.msg).toMatchObject({
      cancelRequest: { action: CancelAction.CANCEL_ACTION_CANCEL_RUN, runId: 'run-1', reason: 'user' },
    });
    h.emit('n1', 'run-1', 1, { type: 'cancelled', reason: 'user' });
    await expect(handle.done).resolves.toEqual({ status: 'cancelled', reason: 'user' });
    await expect(h.service.cancelRun('run-1')).resolves.toBe(false);
    expect(h.service.inFlightRuns).toBe(0);
    h.close();
  });

  it('reserves prompt + max_tokens at admission and settles a client-cut stream to what it streamed', async () => {
    const admitted: AdmissionRequest[] = [];
    const ended: RunEnd[] = [];
    const governor: Governor = {
      admit(request) {
        admitted.push(request);
        return { principal: request.principal?.id ?? '', finish: (runEnd) => ended.push(runEnd) };
      },
      reserve: () => ({ finish: () => undefined }),
      snapshot: () => [],
    };
    const h = setup([{ id: 'n1' }], { governor, reserveMaxTokens: 1000 });
    const controller = new AbortController();
    const prompt = [create.chatMessage({ role: 'user', content: 'x'.repeat(40) })];
    const handle = await submit(
      h.service,
      runInput({
        messages: prompt,
        params: create.generationParams({ maxTokens: 20 }),
        signal: controller.signal,
      }),
    );
    // 10 prompt tokens + the request's max_tokens (not the 1000 fallback).
    expect(admitted[0]?.estimatedTokens).toBe(30);
    h.emit('n1', handle.runId, 1, { type: 'text-delta', text: 'y'.repeat(30) });
    controller.abort();
    h.emit('n1', handle.runId, 2, { type: 'cancelled', reason: 'client-disconnected' });
    await handle.done;
    // No usage from the backend: 10 prompt tokens and ceil(30 / 4) streamed ones count.
    expect(ended).toEqual([
      expect.objectContaining({ outcome: 'cancelled', usage: { inputTokens: 10, outputTokens: 8 } }),
    ]);
    // Without max_tokens (an explicit route has no model policy) the configured reserve applies.
    const second = await submit(h.service, runInput({ messages: prompt }));
    expect(admitted[1]?.estimatedTokens).toBe(1010);
    h.emit('n1', second.runId, 1, { type: 'error', code: 'x', message: 'y', retryable: false, backendMs: 0 });
    await second.done;
    expect(ended[1]?.usage).toEqual({ inputTokens: 0, outputTokens: 0 });
    h.close();
  });

  it('ends a cancelled run locally when the node never confirms', async () => {
    const h = setup([{ id: 'n1' }], { cancelGraceMs: 20 });
    const handle = await submit(h.service, runInput());
    await expect(h.service.cancelRun(handle.runId, 'stop')).resolves.toBe(true);
    await expect(handle.done).resolves.toEqual({ status: 'cancelled', reason: 'stop' });
    expect(h.links.get('n1')?.inFlightRuns).toBe(0);
    expect(h.service.inFlightRuns).toBe(0);
    h.close();
  });

  it('cancels the run on the node when the caller signal aborts', async () => {
    const h = setup();
    const controller = new AbortController();
    const handle = await submit(h.service, runInput({ signal: controller.signal }));
    controller.abort();
    expect(h.channels.get('n1')?.ofKind('cancelRequest')[0]?.msg).toMatchObject({
      cancelRequest: { runId: handle.runId, reason: 'client-disconnected' },
    });
    h.emit('n1', handle.runId, 1, { type: 'cancelled', reason: 'client-disconnected' });
    await expect(handle.done).resolves.toMatchObject({ status: 'cancelled' });
    await expect(submit(h.service, runInput({ signal: controller.signal }))).rejects.toMatchObject({
      code: 'aborted',
    });
    h.close();
  });

  it('returns background runs at once, keeps tracking them and publishes their events on the bus', async () => {
    const h = setup([{ id: 'n1' }], { runBufferSize: 2 });
    const handle = await submit(h.service, runInput({ background: true }));
    expect(h.channels.get('n1')?.ofKind('runRequest')[0]?.msg).toMatchObject({
      runRequest: { background: true },
    });
    for (let seq = 1; seq <= 10; seq += 1)
      h.emit('n1', handle.runId, seq, { type: 'text-delta', text: `${seq}` });
    h.emit('n1', handle.runId, 11, { type: 'complete', detail: 'exit', finishReason: 'stop', backendMs: 1 });
    await expect(handle.done).resolves.toMatchObject({ status: 'completed' });
    await settle();
    expect(h.busEvents.filter((event) => event.type === 'run')).toHaveLength(11);
    // The unread handle kept only its newest events (drop-oldest), then the terminal one.
    expect((await collect(handle.events)).map((event) => event.seq)).toEqual([9, 10, 11]);
    h.close();
  });

  it('ends a foreground run whose reader is stuck with consumer_overflow and cancels it on the node', async () => {
    const h = setup([{ id: 'n1' }], { runBufferSize: 3 });
    const handle = await submit(h.service, runInput());
    for (let seq = 1; seq <= 5; seq += 1) h.emit('n1', handle.runId, seq, { type: 'text-delta', text: 'x' });
    await expect(handle.done).resolves.toMatchObject({ status: 'error', code: 'consumer_overflow' });
    expect(h.channels.get('n1')?.ofKind('cancelRequest')).toHaveLength(1);
    const events = await collect(handle.events);
    expect(events.map((event) => event.part.type)).toEqual([
      'text-delta',
      'text-delta',
      'text-delta',
      'error',
    ]);
    expect(h.service.inFlightRuns).toBe(0);
    h.close();
  });

  it('ends every in-flight run with node_disconnected when the node goes away and releases everything', async () => {
    const h = setup([{ id: 'n1' }, { id: 'n2' }]);
    const first = await submit(h.service, runInput({ node: 'n1' }));
    const second = await submit(h.service, runInput({ node: 'n1', background: true }));
    const other = await submit(h.service, runInput({ node: 'n2' }));
    const reading = collect(first.events);
    const command = h.service.nodeCommand({
      node: 'n1',
      request: create.nodeCommandRequest({ command: 'sessions' }),
    });
    h.emit('n1', first.runId, 1, { type: 'text-delta', text: 'partial' });
    const link = h.links.get('n1');
    if (!link) throw new Error('missing link');
    h.registry.remove(link);
    link.markClosed('heartbeat-timeout');
    await expect(first.done).resolves.toEqual({
      status: 'error',
      code: 'node_disconnected',
      message: 'node n1 disconnected (heartbeat-timeout)',
    });
    await expect(second.done).resolves.toMatchObject({ status: 'error', code: 'node_disconnected' });
    const events = await reading;
    expect(events.map((event) => event.part.type)).toEqual(['text-delta', 'error']);
    expect(events[1]?.seq).toBe(2);
    await expect(command).rejects.toMatchObject({ code: 'node_disconnected' });
    expect(h.service.inFlightRuns).toBe(1);
    expect(link.inFlightRuns).toBe(0);
    expect(link.pendingRequests).toBe(0);
    h.emit('n2', other.runId, 1, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 });
    await expect(other.done).resolves.toMatchObject({ status: 'completed' });
    expect(h.service.inFlightRuns).toBe(0);
    await expect(submit(h.service, runInput({ node: 'n1' }))).rejects.toMatchObject({
      code: 'node_not_found',
    });
    h.close();
  });

  it('fails a submit whose request cannot be sent without leaving anything tracked', async () => {
    const h = setup();
    const channel = h.channels.get('n1');
    if (channel) channel.failSends = true;
    await expect(submit(h.service, runInput())).rejects.toMatchObject({ code: 'node_disconnected' });
    expect(h.service.inFlightRuns).toBe(0);
    expect(h.links.get('n1')?.inFlightRuns).toBe(0);
    h.close();
  });

  it('ends a run that outlives its deadline with run_timeout and cancels it on the node', async () => {
    const h = setup([{ id: 'n1' }], { deadlineGraceMs: 10 });
    const handle = await submit(h.service, runInput({ timeoutMs: 20 }));
    await expect(handle.done).resolves.toMatchObject({ status: 'error', code: 'run_timeout' });
    expect(h.channels.get('n1')?.ofKind('cancelRequest')[0]?.msg).toMatchObject({
      cancelRequest: { reason: 'deadline' },
    });
    expect(h.service.inFlightRuns).toBe(0);
    h.close();
  });

  it('validates its input and refuses duplicates and work after shutdown', async () => {
    const h = setup();
    const error = await submit(
      h.service,
      runInput({ adapter: '', messages: [], timeoutMs: -1, runId: 'bad id' }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).message).toBe(
      'adapter is required; messages must not be empty; timeoutMs must be an integer between 0 and 4294967295; runId must be 1-128 letters, digits, ".", "_", ":" or "-"',
    );
    await submit(h.service, runInput({ runId: 'manual-1' }));
    await expect(submit(h.service, runInput({ runId: 'manual-1' }))).rejects.toMatchObject({
      code: 'invalid_request',
    });
    h.service.shutdown();
    await expect(submit(h.service, runInput())).rejects.toMatchObject({ code: 'shutting_down' });
    h.close();
  });
});

describe('createEdgeService node selection and commands', () => {
  it('resolves nodes by id, alias, single-node fallback, and asks for a choice when ambiguous', () => {
    expect(thrown(() => setup([]).service.resolveNode())).toMatchObject({ code: 'no_nodes' });
    const single = setup([{ id: 'solo', alias: 'only' }]);
    expect(single.service.resolveNode().nodeId).toBe('solo');
    expect(single.service.resolveNode('').nodeId).toBe('solo');
    const h = setup([
      { id: 'a', alias: 'gpu' },
      { id: 'b', alias: 'gpu' },
      { id: 'c', alias: 'cpu' },
    ]);
    expect(h.service.resolveNode('a').nodeId).toBe('a');
    expect(h.service.resolveNode('cpu').nodeId).toBe('c');
    expect(thrown(() => h.service.resolveNode())).toMatchObject({
      code: 'node_ambiguous',
      message: 'several nodes are connected (a (gpu), b (gpu), c (cpu)); choose one by node id or alias',
    });
    expect(thrown(() => h.service.resolveNode('gpu'))).toMatchObject({ code: 'node_ambiguous' });
    expect(thrown(() => h.service.resolveNode('zzz'))).toMatchObject({
      code: 'node_not_found',
      message: "node 'zzz' is not connected; connected: a (gpu), b (gpu), c (cpu)",
    });
    expect(h.service.listNodes().map((node) => node.nodeId)).toEqual(['a', 'b', 'c']);
  });

  it('sends node commands, returns node errors as responses, and times out silent nodes', async () => {
    const h = setup();
    const channel = h.channels.get('n1');
    const link = h.links.get('n1');
    channel?.onSend((envelope: Envelope) => {
      if (envelope.msg?.$case !== 'nodeCommandRequest') return;
      const request = envelope.msg.nodeCommandRequest;
      if (request.command === 'hang') return;
      const response =
        request.command === 'status'
          ? create.nodeCommandResponse({
              ok: false,
              error: `status check not supported for target ${request.target}`,
            })
          : create.nodeCommandResponse({ ok: true, result: { adapter: request.adapter } });
      queueMicrotask(() =>
        link?.handle({
          requestId: envelope.requestId,
          msg: { $case: 'nodeCommandResponse', nodeCommandResponse: response },
        }),
      );
    });
    await expect(
      h.service.nodeCommand({
        request: create.nodeCommandRequest({ command: 'capabilities', adapter: 'cli' }),
      }),
    ).resolves.toMatchObject({ ok: true, result: { adapter: 'cli' } });
    await expect(
      h.service.usageStatus({ adapter: 'cli', target: 'fake-cli', sessionId: 'default' }),
    ).resolves.toMatchObject({ ok: false, error: 'status check not supported for target fake-cli' });
    expect(channel?.ofKind('nodeCommandRequest')[1]?.msg).toMatchObject({
      nodeCommandRequest: { command: 'status', adapter: 'cli', target: 'fake-cli', sessionId: 'default' },
    });
    await expect(
      h.service.nodeCommand({ request: create.nodeCommandRequest({ command: 'hang' }), timeoutMs: 20 }),
    ).rejects.toMatchObject({ code: 'timeout' });
    await expect(
      h.service.nodeCommand({ request: create.nodeCommandRequest({ command: '' }) }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(link?.pendingRequests).toBe(0);
    h.close();
  });

  it('terminates a session with TERMINATE_SESSION and returns the node id', async () => {
    const h = setup([{ id: 'n1', alias: 'test-node' }]);
    await expect(
      h.service.terminateSession({
        node: 'test-node',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
      }),
    ).resolves.toBe('n1');
    expect(h.channels.get('n1')?.ofKind('cancelRequest')[0]?.msg).toMatchObject({
      cancelRequest: {
        action: CancelAction.CANCEL_ACTION_TERMINATE_SESSION,
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
      },
    });
    await expect(
      h.service.terminateSession({ adapter: 'cli', target: '', sessionId: '' }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
    });
    h.close();
  });
});

describe('createEdgeService admission', () => {
  /** n1 serves model `m` through two providers of capacity 2 (adapter instance `vllm`); the node takes 3 runs. */
  function admissionConfig(maxConcurrency = 3): PoolConfig {
    const node = nodeConfig('n1', [
      providerConfig('p1', {
        adapter: 'vllm',
        adapter_instance: 'vllm',
        models: ['served'],
        capacity: 2,
        max_queue: 4,
      }),
      providerConfig('p2', {
        adapter: 'vllm',
        adapter_instance: 'vllm',
        models: ['served'],
        capacity: 2,
        max_queue: 4,
      }),
    ]);
    return {
      models: [modelConfig('m', { p1: 'served', p2: 'served' }, { default_max_tokens: 128 })],
      nodes: [{ ...node, runtime: { ...node.runtime, max_concurrency: maxConcurrency } }],
    };
  }

  const spec = (sessionBase = 'openai'): RunSpec => ({
    session: { kind: 'slot', baseId: sessionBase },
    messages: [create.chatMessage({ role: 'user', content: 'hi' })],
  });

  function complete(h: ReturnType<typeof setup>, runId: string): void {
    h.emit('n1', runId, 9, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
  }

  it('admits model runs up to the node bound, queues the rest FIFO and releases each slot once at the end', async () => {
    const recorded: string[] = [];
    const h = setup(
      [{ id: 'n1' }],
      {
        metrics: {
          dispatched: (surface, provider, node) => recorded.push(`${surface}:${provider ?? '-'}@${node}`),
          rejected: (surface, model, reason) => recorded.push(`${surface}:${model}:${reason}`),
          retried: (surface, reason) => recorded.push(`${surface}:retried:${reason}`),
        },
      },
      admissionConfig(),
    );
    const running = await Promise.all(
      [1, 2, 3].map(() => h.service.submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'openai' })),
    );
    expect(running.map((run) => run.sessionId)).toEqual(['openai', 'openai-2', 'openai-3']);
    expect(new Set(running.map((run) => run.providerId))).toEqual(new Set(['p1', 'p2']));
    const sent = h.channels.get('n1')?.ofKind('runRequest') ?? [];
    expect(sent).toHaveLength(3);
    // The model's generation policy was applied by the service.
    expect(sent[0]?.msg).toMatchObject({
      runRequest: { adapter: 'vllm', target: 'served', params: { maxTokens: 128 } },
    });
    const fourth = h.service.submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'a2a' });
    await settle();
    expect(h.service.admissionTotals()).toEqual({ inFlight: 3, queued: 1 });
    complete(h, running[0]?.runId ?? '');
    const admitted = await fourth;
    expect(admitted.queueMs).toBeGreaterThanOrEqual(0);
    expect(h.service.admissionTotals()).toEqual({ inFlight: 3, queued: 0 });
    for (const run of [...running.slice(1), admitted]) complete(h, run.runId);
    await Promise.all([...running, admitted].map((run) => run.done));
    expect(h.service.admissionTotals()).toEqual({ inFlight: 0, queued: 0 });
    expect(
      h.service.providers().map((provider) => [provider.providerId, provider.inFlight, provider.queued]),
    ).toEqual([
      ['p1', 0, 0],
      ['p2', 0, 0],
    ]);
    expect(recorded.filter((line) => line.startsWith('a2a:'))).toHaveLength(1);
    h.close();
  });

  it('gives each principal sessions of its own: a key reuses its warm slot, another key never gets it', async () => {
    const h = setup([{ id: 'n1' }], {}, admissionConfig());
    const run = (principal: string | undefined, session: RunSpec['session']) =>
      h.service.submitRun(
        { kind: 'model', model: 'm' },
        { ...spec(), session },
        { surface: 'openai', ...(principal ? { principal: unlimitedPrincipal(principal) } : {}) },
      );
    const slot: RunSpec['session'] = { kind: 'slot', baseId: 'openai' };
    const a = await run('team', slot);
    const b = await run('team-a', slot);
    const anonymous = await run(undefined, slot);
    expect(a.sessionId).toBe(`k${principalDigest('team')}.openai`);
    expect(b.sessionId).toBe(`k${principalDigest('team-a')}.openai`);
    // Without keys the ids are what they were before principals existed.
    expect(anonymous.sessionId).toBe('openai');
    for (const handle of [a, b, anonymous]) complete(h, handle.runId);
    await Promise.all([a, b, anonymous].map((handle) => handle.done));
    // Key A's next request continues A's session (slot 0 of A's own base), not a fresh one.
    const again = await run('team', slot);
    expect(again.sessionId).toBe(a.sessionId);
    const fixed = await run('team', { kind: 'fixed', sessionId: 'a2a-ctx' });
    expect(fixed.sessionId).toBe(`k${principalDigest('team')}.a2a-ctx`);
    const sent = (h.channels.get('n1')?.ofKind('runRequest') ?? []).map((frame) =>
      frame.msg?.$case === 'runRequest' ? frame.msg.runRequest.sessionId : '',
    );
    expect(sent).toEqual([a.sessionId, b.sessionId, 'openai', a.sessionId, fixed.sessionId]);
    for (const handle of [again, fixed]) complete(h, handle.runId);
    await Promise.all([again, fixed].map((handle) => handle.done));
    expect(h.service.admissionTotals()).toEqual({ inFlight: 0, queued: 0 });
    h.close();
  });

  it('counts an explicit route against the matching provider and refuses a full queue with queue_full', async () => {
    const h = setup([{ id: 'n1' }], {}, admissionConfig(10));
    const route = { kind: 'route', node: 'n1', adapter: 'vllm', target: 'served' } as const;
    const fixed = (id: string): RunSpec => ({ ...spec(), session: { kind: 'fixed', sessionId: id } });
    const runs = await Promise.all(
      ['a', 'b', 'c', 'd'].map((id) => h.service.submitRun(route, fixed(id), { surface: 'console' })),
    );
    expect(h.service.providers().map((provider) => provider.inFlight)).toEqual([2, 2]);
    const queued = Array.from({ length: 8 }, (_, index) =>
      h.service.submitRun(route, fixed(`q${index}`), { surface: 'admin' }),
    );
    const refused = await h.service
      .submitRun(route, fixed('late'), { surface: 'admin' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ServiceError);
    expect(refused).toMatchObject({ code: 'queue_full', retryAfterSeconds: 1, fault: 'transient' });
    for (const run of runs) complete(h, run.runId);
    // Each queued run completes as soon as it is admitted, freeing the slot for the next one.
    const later = await Promise.all(
      queued.map(async (admission) => {
        const run = await admission;
        expect(h.service.providers().every((provider) => provider.inFlight <= 2)).toBe(true);
        complete(h, run.runId);
        return run;
      }),
    );
    await Promise.all(later.map((run) => run.done));
    expect(h.service.admissionTotals()).toEqual({ inFlight: 0, queued: 0 });
    h.close();
  });

  it('a caller that aborts while queued leaves the queue with aborted; a disconnect mid-run releases the slot', async () => {
    const h = setup([{ id: 'n1' }], {}, admissionConfig(1));
    const first = await h.service.submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'openai' });
    const controller = new AbortController();
    const waiting = h.service
      .submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'openai', signal: controller.signal })
      .catch((error: unknown) => error);
    await settle();
    expect(h.service.admissionTotals().queued).toBe(1);
    controller.abort();
    expect(await waiting).toMatchObject({ code: 'aborted' });
    expect(h.service.admissionTotals()).toEqual({ inFlight: 1, queued: 0 });
    await h.links.get('n1')?.close('peer-closed');
    await expect(first.done).resolves.toMatchObject({ status: 'error', code: 'node_disconnected' });
    expect(h.service.admissionTotals()).toEqual({ inFlight: 0, queued: 0 });
    h.close();
  });

  it('an unknown model is model_not_found; a model whose providers are all offline is no_provider_available', async () => {
    const h = setup([{ id: 'n2' }], {}, admissionConfig());
    await expect(
      h.service.submitRun({ kind: 'model', model: 'nope' }, spec(), { surface: 'openai' }),
    ).rejects.toMatchObject({
      code: 'model_not_found',
      fault: 'caller',
    });
    await expect(
      h.service.submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'openai' }),
    ).rejects.toMatchObject({
      code: 'no_provider_available',
      retryAfterSeconds: 1,
    });
    expect(h.service.admissionTotals()).toEqual({ inFlight: 0, queued: 0 });
    h.close();
  });
});
