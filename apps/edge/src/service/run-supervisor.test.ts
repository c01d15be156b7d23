// The run supervisor driven through the real service, placement and pool on a manual clock: a scripted node on a
// real NodeLink for runs executing here, the cluster's real ForwardedRun over a recording transport for runs
// forwarded to another edge, a real governor and a counting home-edge limit lease. Every test ends with every
// lease count at zero: pool leases and waiters, limit leases (governor and home edge), session slots, forwarded
// runs, supervised runs and timers.
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { create } from '@iop/wire';
import { ForwardedRun, type ForwardTransport } from '../cluster/edge-cluster.js';
import { createEventBus } from '../events/event-bus.js';
import type { EventBus } from '../events/types.js';
import { createGovernor, type Governor, type LimitLease } from '../governance/governor.js';
import type { Principal } from '../governance/principal.js';
import type { SharedLimits } from '../governance/shared-limits.js';
import { ManualClock } from '@iop/clock';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import { createNodeRegistry } from '../node/node-registry.js';
import type { PlacementRequest } from '../placement/placement.js';
import type { RemoteEdges } from '../placement/placement-router.js';
import { SessionSlots } from '../placement/session-slots.js';
import { CircuitBreaker } from '../pool/circuit-breaker.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import type { ProviderStatus } from '../present/provider-status.js';
import { ScriptedNode, type NodeScript } from '../test-support/scripted-node.js';
import { createEdgeService, type EdgeServiceImpl } from './edge-service.js';
import { ServiceError } from './errors.js';
import { assertTransition, RUN_TRANSITIONS, RunStateError, type RunState } from './run-supervisor.js';
import type { RunEventWithMeta, RunHandle, SubmitOptions } from './types.js';

const CONFIG = (() => {
  const result = parseConfigText(
    `
edge: { id: edge-a }
refresh: { enabled: false, admin_token: "" }
models:
  - { id: m, providers: { pa: "m1" } }
nodes:
  - id: na
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: 1 }
`,
    'supervisor-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();

/** `hold` waits for a cancel; anything else answers at once. */
const script: NodeScript = (request) => ({
  parts: [
    { type: 'start', sessionId: request.sessionId, adapter: request.adapter, target: request.target },
    { type: 'text-delta', text: 'hi' },
    { type: 'usage', usage: create.usage({ promptTokens: 3, completionTokens: 2 }) },
    ...(request.messages.at(-1)?.content === 'hold'
      ? []
      : [{ type: 'complete' as const, detail: 'stop', finishReason: 'stop', backendMs: 1 }]),
  ],
});

/** A home edge's lease per run, counted (what cluster-limits' HomeLimitLease is to the home edge). */
class CountingLimits implements SharedLimits {
  open = 0;
  readonly finished: number[] = [];

  reserve(principal: Principal): Promise<Principal> {
    return Promise.resolve({ ...principal, lease: this.lease() });
  }

  lease(): LimitLease {
    this.open += 1;
    let finished = false;
    return {
      finish: (tokens) => {
        if (finished) return;
        finished = true;
        this.open -= 1;
        this.finished.push(tokens);
      },
    };
  }
}

/** The other edges: every models[] run is placed on `owner` (undefined = here), forwarded over a recorder. */
class FakeFabric implements RemoteEdges, ForwardTransport {
  accepting = true;
  owner: string | undefined = 'edge-b';
  readonly runs: ForwardedRun[] = [];
  readonly forwards: { run: ForwardedRun; request: PlacementRequest }[] = [];
  readonly cancels: string[] = [];
  /** Forwards sent and not released. */
  readonly open = new Set<ForwardedRun>();

  edgeForProviders(): string | undefined {
    return this.owner;
  }
  edgeOfNode(): string | undefined {
    return undefined;
  }
  edgeOfFreeProvider(): string | undefined {
    return undefined;
  }
  reserve(edgeId: string): ForwardedRun {
    const run = new ForwardedRun(edgeId, `f${this.runs.length + 1}`, this, 60_000, 8_000, systemClock);
    this.runs.push(run);
    return run;
  }
  providers(local: ProviderStatus[]): ProviderStatus[] {
    return local;
  }
  nodes() {
    return [];
  }
  sendForward(run: ForwardedRun, request: PlacementRequest): void {
    this.open.add(run);
    this.forwards.push({ run, request });
  }
  sendCancel(_run: ForwardedRun, reason: string): void {
    this.cancels.push(reason);
  }
  accepted(): void {}
  released(run: ForwardedRun): void {
    this.open.delete(run);
  }

  /** The owner's answer to the latest forward: admitted on its node nb (with the run's first events, if any). */
  accept(events?: RunEventWithMeta[]): ForwardedRun {
    const forward = this.forwards.at(-1);
    if (!forward) throw new Error('nothing was forwarded');
    forward.run.receive({
      ...(events ? { events } : {}),
      ok: true,
      runId: forward.request.runId,
      nodeId: 'nb',
      adapter: 'ollama',
      target: 'm1',
      sessionId: 'c',
      providerId: 'pb',
      queueMs: 0,
    });
    return forward.run;
  }
}

interface Harness {
  clock: ManualClock;
  node: ScriptedNode;
  pool: ProviderPool;
  sessions: SessionSlots;
  governor: Governor;
  limits: CountingLimits;
  fabric: FakeFabric;
  service: EdgeServiceImpl;
  /** Every state each run entered after `queued`, by run id. */
  states: Map<string, RunState[]>;
}

const harnesses: Harness[] = [];

function setup(options: { fabric?: boolean; sharedLimits?: boolean } = {}): Harness {
  const clock = new ManualClock();
  const registry = createNodeRegistry();
  const node = new ScriptedNode('na', script);
  registry.add(node.link);
  const events = createEventBus({ replaySize: 16, queueSize: 256 });
  const pool = createProviderPool({ config: CONFIG, nodes: registry, events, clock, pollIntervalMs: 20 });
  pool.start();
  const sessions = new SessionSlots();
  const governor = createGovernor({
    clock,
    sink: { record: () => undefined },
    spent: { tokensSince: () => 0 },
  });
  const limits = new CountingLimits();
  const fabric = new FakeFabric();
  const states = new Map<string, RunState[]>();
  const service = createEdgeService({
    registry,
    pool,
    events,
    logger: silentLogger,
    clock,
    sessions,
    governor,
    ...(options.fabric ? { remote: fabric } : {}),
    ...(options.sharedLimits ? { sharedLimits: limits } : {}),
    onRunState: (run, state) => {
      const list = states.get(run.runId) ?? [];
      list.push(state);
      states.set(run.runId, list);
    },
  });
  const harness = { clock, node, pool, sessions, governor, limits, fabric, service, states };
  harnesses.push(harness);
  return harness;
}

afterEach(() => {
  for (const harness of harnesses.splice(0)) {
    harness.node.stop();
    harness.pool.close();
  }
});

const KEY: Principal = {
  id: 'key-a',
  models: undefined,
  rpm: null,
  tpm: null,
  maxConcurrent: 4,
  tokenBudget: null,
  weight: 1,
  priority: 'interactive',
};

function submit(h: Harness, text: string, options: Partial<SubmitOptions> & { timeoutMs?: number } = {}) {
  const { timeoutMs, ...rest } = options;
  return h.service.submitRun(
    { kind: 'model', model: 'm' },
    {
      session: { kind: 'slot', baseId: 'c' },
      messages: [create.chatMessage({ role: 'user', content: text })],
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    },
    { surface: 'openai', principal: KEY, ...rest },
  );
}

async function waitFor(predicate: () => boolean): Promise<void> {
  for (let turn = 0; turn < 500 && !predicate(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!predicate()) throw new Error('condition not met');
}

async function collect(handle: RunHandle): Promise<RunEventWithMeta[]> {
  const events: RunEventWithMeta[] = [];
  for await (const event of handle.events) events.push(event);
  return events;
}

/** Every lease the supervisor owns is back. */
function expectAllReleased(h: Harness): void {
  expect(h.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  expect(h.governor.snapshot().map((entry) => entry.inFlight)).toEqual(h.governor.snapshot().map(() => 0));
  expect(h.limits.open).toBe(0);
  expect(h.sessions.held).toBe(0);
  expect(h.fabric.open.size).toBe(0);
  expect(h.service.inFlightRuns).toBe(0);
  expect(h.clock.pending).toBe(0);
  expect(h.node.open).toBe(0);
}

describe('run supervisor states', () => {
  it('runs a local run queued → admitted → dispatched → streaming → ended and releases everything once', async () => {
    const h = setup();
    const handle = await submit(h, 'hello');
    const events = await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(events.map((event) => event.part.type)).toEqual(['start', 'text-delta', 'usage', 'complete']);
    expect(h.states.get(handle.runId)).toEqual(['admitted', 'dispatched', 'streaming', 'ended']);
    expect(h.governor.snapshot()[0]).toMatchObject({ principal: 'key-a', inFlight: 0, tokensLastMinute: 5 });
    expectAllReleased(h);
  });

  it('leaves the queue when cancelled while queued, holding nothing', async () => {
    const h = setup();
    const first = await submit(h, 'hold');
    const controller = new AbortController();
    const second = submit(h, 'two', { signal: controller.signal });
    await waitFor(() => h.pool.totals().queued === 1);
    expect(h.governor.snapshot()[0]?.inFlight).toBe(2);
    controller.abort();
    await expect(second).rejects.toMatchObject({ code: 'aborted' });
    expect([...h.states.values()].filter((states) => states.join() === 'ended')).toHaveLength(1);
    expect(h.governor.snapshot()[0]?.inFlight).toBe(1);
    // The running one: cancelled (streaming → ending), the node confirms (→ ended).
    await waitFor(() => h.states.get(first.runId)?.includes('streaming') ?? false);
    await first.cancel('operator');
    expect(await first.done).toMatchObject({ status: 'cancelled', reason: 'operator' });
    expect(h.states.get(first.runId)).toEqual(['admitted', 'dispatched', 'streaming', 'ending', 'ended']);
    expectAllReleased(h);
  });

  it('ends a cancel the node never confirms after the one grace period (dispatched → ending → ended)', async () => {
    const h = setup();
    h.node.ignoreCancels = true;
    const handle = await submit(h, 'hold');
    // Cancelled before any event came back.
    await handle.cancel('client gone');
    expect(h.node.cancelled).toEqual([handle.runId]);
    expect(h.clock.pending).toBe(1);
    h.clock.advance(5_000);
    expect(await handle.done).toEqual({ status: 'cancelled', reason: 'client gone' });
    expect(h.states.get(handle.runId)).toEqual(['admitted', 'dispatched', 'ending', 'ended']);
    h.node.stop();
    expectAllReleased(h);
  });

  it('refuses a run its key may not have before it takes any capacity', async () => {
    const h = setup();
    const refusal = submit(h, 'hello', { principal: { ...KEY, models: new Set(['other']) } });
    await expect(refusal).rejects.toMatchObject({ code: 'model_not_found' });
    expect([...h.states.values()]).toEqual([['ended']]);
    expect(h.node.requests).toHaveLength(0);
    expectAllReleased(h);
  });

  it('ends a forwarded run at its one deadline while it streams, cancels it on the owner, returns the lease', async () => {
    const h = setup({ fabric: true, sharedLimits: true });
    const pending = submit(h, 'hello', { timeoutMs: 1_000 });
    await waitFor(() => h.fabric.forwards.length === 1);
    const forward = h.fabric.accept();
    const handle = await pending;
    expect(handle).toMatchObject({ nodeId: 'nb', providerId: 'pb' });
    expect(h.fabric.forwards[0]?.request.runId).toBe(handle.runId);
    expect(h.limits.open).toBe(1);
    forward.receive({
      t: 'events',
      events: [
        { runId: handle.runId, nodeId: 'nb', seq: 1, atUnixMs: 0, part: { type: 'text-delta', text: 'a' } },
      ],
    });
    const reading = collect(handle);
    // One timer on this edge for the run: its deadline (timeout + grace + the forward's slack).
    expect(h.clock.pending).toBe(1);
    h.clock.advance(1_000 + 2_000 + 8_000);
    expect(await handle.done).toMatchObject({ status: 'error', code: 'run_timeout' });
    expect((await reading).map((event) => event.part.type)).toEqual(['text-delta', 'error']);
    expect(h.fabric.cancels).toEqual(['deadline']);
    expect(h.states.get(handle.runId)).toEqual(['admitted', 'dispatched', 'streaming', 'ended']);
    // Ended here without the owner's word: the home edge's lease is returned from here.
    expect(h.limits.finished).toEqual([0]);
    expect(h.node.requests).toHaveLength(0);
    expectAllReleased(h);
  });

  it('ends a forwarded run whose whole answer came with the reply (dispatched → streaming → ended)', async () => {
    // Local limits: a shared key's lease would be handed to the owner, which this harness does not play.
    const h = setup({ fabric: true });
    const pending = submit(h, 'hello');
    await waitFor(() => h.fabric.forwards.length === 1);
    const runId = h.fabric.forwards[0]?.request.runId ?? '';
    h.fabric.accept([
      { runId, nodeId: 'nb', seq: 1, atUnixMs: 0, part: { type: 'text-delta', text: 'a' } },
      {
        runId,
        nodeId: 'nb',
        seq: 2,
        atUnixMs: 0,
        part: { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 },
      },
    ]);
    const handle = await pending;
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect((await collect(handle)).map((event) => event.part.type)).toEqual(['text-delta', 'complete']);
    expect(h.states.get(runId)).toEqual(['admitted', 'dispatched', 'streaming', 'ended']);
    expect(h.fabric.cancels).toEqual([]);
    expectAllReleased(h);
  });

  it('ends a forwarded run with node_disconnected when its owner edge is lost', async () => {
    const h = setup({ fabric: true, sharedLimits: true });
    const pending = submit(h, 'hello');
    await waitFor(() => h.fabric.forwards.length === 1);
    const forward = h.fabric.accept();
    const handle = await pending;
    forward.receive({
      t: 'events',
      events: [
        { runId: handle.runId, nodeId: 'nb', seq: 1, atUnixMs: 0, part: { type: 'text-delta', text: 'a' } },
      ],
    });
    forward.lost("edge edge-b, which owned the run's node, is gone");
    expect(await handle.done).toMatchObject({ status: 'error', code: 'node_disconnected' });
    expect(h.states.get(handle.runId)).toEqual(['admitted', 'dispatched', 'streaming', 'ended']);
    // Later messages of the lost owner change nothing.
    forward.receive({ t: 'done', outcome: { status: 'completed', detail: 'stop', finishReason: 'stop' } });
    expect(h.limits.finished).toEqual([0]);
    expectAllReleased(h);
  });

  it('admits a run here when the owner edge never took it (dispatched → queued → admitted here)', async () => {
    const h = setup({ fabric: true, sharedLimits: true });
    const pending = submit(h, 'hello');
    await waitFor(() => h.fabric.forwards.length === 1);
    h.fabric.owner = undefined;
    h.fabric.forwards[0]?.run.unanswered('no responders on iop.run.edge-b');
    const handle = await pending;
    expect(handle).toMatchObject({ nodeId: 'na', providerId: 'pa' });
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(h.states.get(handle.runId)).toEqual([
      'admitted',
      'dispatched',
      'queued',
      'admitted',
      'dispatched',
      'streaming',
      'ended',
    ]);
    expect(h.node.requests.map((request) => request.runId)).toEqual([handle.runId]);
    // Admitted here with the home edge's lease: the governor hands the run's tokens to it, once.
    expect(h.limits.finished).toEqual([5]);
    expectAllReleased(h);
  });

  it('ends a run served for an edge that was lost (the requester) within the cancel grace', async () => {
    const h = setup();
    h.node.ignoreCancels = true;
    // What the cluster does for a forwarded run: the principal carries the requester's home-edge lease.
    const principal = { ...KEY, lease: h.limits.lease() };
    const handle = await h.service.runHere(
      { kind: 'model', model: 'm' },
      {
        session: { kind: 'slot', baseId: 'c' },
        messages: [create.chatMessage({ role: 'user', content: 'hold' })],
        runId: 'run-from-edge-b',
      },
      { surface: 'openai', principal },
    );
    expect(handle.runId).toBe('run-from-edge-b');
    const reader = handle.events[Symbol.asyncIterator]();
    // start, text, usage: the run reported its tokens.
    for (let read = 0; read < 3; read++) await reader.next();
    // The requesting edge is gone: the cluster cancels what it ran for it.
    await h.service.cancelRun(handle.runId, 'edge edge-b is gone');
    h.clock.advance(5_000);
    expect(await handle.done).toEqual({ status: 'cancelled', reason: 'edge edge-b is gone' });
    expect(h.limits.finished).toEqual([5]);
    h.node.stop();
    expectAllReleased(h);
  });
});

describe('run state transitions', () => {
  it('allows exactly the listed transitions and throws RunStateError on any other', () => {
    const states = Object.keys(RUN_TRANSITIONS) as RunState[];
    for (const from of states) {
      for (const to of states) {
        if (RUN_TRANSITIONS[from].includes(to)) expect(() => assertTransition('r', from, to)).not.toThrow();
        else expect(() => assertTransition('r', from, to)).toThrow(RunStateError);
      }
    }
    expect(RUN_TRANSITIONS.ended).toEqual([]);
    expect(() => assertTransition('r', 'ended', 'streaming')).toThrow(
      'run r: illegal transition ended → streaming',
    );
  });

  it('maps a refusal of the owner edge to its service error', async () => {
    const h = setup({ fabric: true });
    const pending = submit(h, 'hello');
    await waitFor(() => h.fabric.forwards.length === 1);
    h.fabric.forwards[0]?.run.receive({
      ok: false,
      code: 'queue_full',
      message: 'queue full on edge-b',
      retryAfterSeconds: 2,
    });
    const error = await pending.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ code: 'queue_full', retryAfterSeconds: 2 });
    expectAllReleased(h);
  });
});

// Retry before the first byte: one model `r` on two providers, pa on node na and pb on node nb, each answering
// as `behaviour` says. Every test ends with every lease, slot, waiter, timer and run at zero.
const RETRY_CONFIG = (() => {
  const result = parseConfigText(
    `
edge: { id: edge-a }
refresh: { enabled: false, admin_token: "" }
# Affinity off: these runs repeat one conversation, and a retried one would stick to the provider that served it.
models:
  - { id: r, providers: { pa: "ra", pb: "rb" }, affinity: { enabled: false } }
  - { id: once, providers: { pa: "ra", pb: "rb" }, retry: { max_attempts: 1 }, affinity: { enabled: false } }
nodes:
  - id: na
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["ra"], capacity: 1, priority: 0 }
  - id: nb
    adapters: { ollama: { base_url: "http://127.0.0.1:11435" } }
    providers:
      - { id: pb, type: ollama, category: local_inference, adapter: ollama, models: ["rb"], capacity: 1, priority: 1 }
`,
    'supervisor-retry-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();

type Behaviour = 'ok' | 'hold' | 'http_503' | 'start_then_503' | 'mid_stream' | 'bad_request';

function behave(behaviour: Behaviour, request: { sessionId: string; adapter: string; target: string }) {
  const start = {
    type: 'start' as const,
    sessionId: request.sessionId,
    adapter: request.adapter,
    target: request.target,
  };
  const failure = (code: string, retryable: boolean) => ({
    type: 'error' as const,
    code,
    message: `${code} from ${request.target}`,
    retryable,
    backendMs: 0,
  });
  switch (behaviour) {
    case 'ok':
      return [
        start,
        { type: 'text-delta' as const, text: `from ${request.target}` },
        { type: 'complete' as const, detail: 'stop', finishReason: 'stop', backendMs: 1 },
      ];
    case 'hold':
      return [start];
    case 'http_503':
      return [failure('upstream_http_503', true)];
    case 'start_then_503':
      return [
        start,
        { type: 'usage' as const, usage: create.usage({ promptTokens: 1 }) },
        failure('upstream_http_503', true),
      ];
    case 'mid_stream':
      return [start, { type: 'text-delta' as const, text: 'partial' }, failure('upstream_error', true)];
    case 'bad_request':
      return [failure('upstream_http_400', false)];
  }
}

interface RetryHarness {
  clock: ManualClock;
  nodes: ScriptedNode[];
  pool: ProviderPool;
  sessions: SessionSlots;
  governor: Governor;
  service: EdgeServiceImpl;
  circuits: CircuitBreaker;
  events: EventBus;
  behaviour: Record<string, Behaviour>;
  retries: string[];
  states: Map<string, RunState[]>;
}

const retryHarnesses: RetryHarness[] = [];

function retrySetup(behaviour: Record<string, Behaviour>, maxAttempts = 2): RetryHarness {
  const clock = new ManualClock();
  const registry = createNodeRegistry();
  const nodes = ['na', 'nb'].map(
    (nodeId) =>
      new ScriptedNode(nodeId, (request) => ({
        parts: behave(behaviour[request.providerId] ?? 'ok', request),
      })),
  );
  for (const node of nodes) registry.add(node.link);
  const events = createEventBus({ replaySize: 16, queueSize: 256 });
  const circuits = new CircuitBreaker({
    settings: RETRY_CONFIG.routing.circuit_breaker,
    clock,
    logger: silentLogger,
  });
  const pool = createProviderPool({
    config: RETRY_CONFIG,
    nodes: registry,
    events,
    clock,
    pollIntervalMs: 20,
    circuits,
  });
  pool.start();
  const sessions = new SessionSlots();
  const governor = createGovernor({
    clock,
    sink: { record: () => undefined },
    spent: { tokensSince: () => 0 },
  });
  const retries: string[] = [];
  const states = new Map<string, RunState[]>();
  const service = createEdgeService({
    registry,
    pool,
    events,
    logger: silentLogger,
    clock,
    sessions,
    governor,
    retryAttempts: () => maxAttempts,
    outcomes: circuits,
    metrics: {
      dispatched: () => undefined,
      rejected: () => undefined,
      retried: (surface, reason) => retries.push(`${surface}:${reason}`),
    },
    onRunState: (run, state) => {
      const list = states.get(run.runId) ?? [];
      list.push(state);
      states.set(run.runId, list);
    },
  });
  const harness = {
    clock,
    nodes,
    pool,
    sessions,
    governor,
    service,
    circuits,
    events,
    behaviour,
    retries,
    states,
  };
  retryHarnesses.push(harness);
  return harness;
}

afterEach(() => {
  for (const harness of retryHarnesses.splice(0)) {
    for (const node of harness.nodes) node.stop();
    harness.pool.close();
  }
});

function submitTo(
  h: RetryHarness,
  model: string,
  options: Partial<SubmitOptions> & { timeoutMs?: number } = {},
) {
  const { timeoutMs, ...rest } = options;
  return h.service.submitRun(
    { kind: 'model', model },
    {
      session: { kind: 'slot', baseId: 'c' },
      messages: [create.chatMessage({ role: 'user', content: 'hello' })],
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    },
    { surface: 'openai', principal: KEY, ...rest },
  );
}

/** An explicit route's run holding pb's only slot until cancelled. */
async function holdOnNb(h: RetryHarness): Promise<RunHandle> {
  const held = await h.service.submitRun(
    { kind: 'route', node: 'nb', adapter: 'ollama', target: 'rb' },
    {
      session: { kind: 'slot', baseId: 'c' },
      messages: [create.chatMessage({ role: 'user', content: 'hold' })],
    },
    { surface: 'openai', principal: KEY },
  );
  await waitFor(() => h.nodes[1]?.open === 1);
  return held;
}

function requestsTo(h: RetryHarness): string[] {
  return h.nodes.flatMap((node) => node.requests.map((request) => request.providerId));
}

function expectRetryReleased(h: RetryHarness): void {
  expect(h.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  expect(h.governor.snapshot().map((entry) => entry.inFlight)).toEqual(h.governor.snapshot().map(() => 0));
  expect(h.sessions.held).toBe(0);
  expect(h.service.inFlightRuns).toBe(0);
  expect(h.clock.pending).toBe(0);
  for (const node of h.nodes) {
    expect(node.open).toBe(0);
  }
}

describe('retry before the first byte', () => {
  it('places a run that failed with 503 before any output on the other provider (streaming → queued → …)', async () => {
    const h = retrySetup({ pa: 'start_then_503', pb: 'ok' });
    const bus: RunEventWithMeta[] = [];
    const subscription = h.events.subscribe({ filter: (event) => event.type === 'run' });
    void (async () => {
      for await (const event of subscription) if (event.type === 'run') bus.push(event.event);
    })();
    const handle = await submitTo(h, 'r');
    const events = await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    // Nothing of the failed attempt reaches the caller; seq keeps increasing across attempts.
    expect(events.map((event) => event.part.type)).toEqual([
      'start',
      'usage',
      'start',
      'text-delta',
      'complete',
    ]);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events.find((event) => event.part.type === 'text-delta')?.part).toMatchObject({ text: 'from rb' });
    expect(requestsTo(h)).toEqual(['pa', 'pb']);
    expect(handle.attempts).toBe(2);
    expect(handle.providerId).toBe('pb');
    expect(handle.nodeId).toBe('nb');
    expect(h.states.get(handle.runId)).toEqual([
      'admitted',
      'dispatched',
      'streaming',
      'queued',
      'admitted',
      'dispatched',
      'streaming',
      'ended',
    ]);
    expect(h.retries).toEqual(['openai:upstream_5xx']);
    // The bus never sees the failed attempt's error; each attempt's first event names its provider.
    await waitFor(() => bus.some((event) => event.part.type === 'complete'));
    subscription.close();
    expect(bus.map((event) => event.part.type)).toEqual([
      'start',
      'usage',
      'start',
      'text-delta',
      'complete',
    ]);
    expect(bus.filter((event) => event.admitted).map((event) => event.admitted?.providerId)).toEqual([
      'pa',
      'pb',
    ]);
    expectRetryReleased(h);
  });

  it('retries a failure that came before any event (dispatched → queued)', async () => {
    const h = retrySetup({ pa: 'http_503', pb: 'ok' });
    const handle = await submitTo(h, 'r');
    await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(h.states.get(handle.runId)?.slice(0, 3)).toEqual(['admitted', 'dispatched', 'queued']);
    expect(handle.attempts).toBe(2);
    expectRetryReleased(h);
  });

  it('retries inside submit when the dispatch itself fails (the link closed before the run was sent)', async () => {
    const h = retrySetup({ pa: 'ok', pb: 'ok' });
    // Still listed, but closed: the pool leases pa, sending fails, the run goes to pb before submit returns.
    h.nodes[0]?.link.markClosed('connection reset');
    const handle = await submitTo(h, 'r');
    expect(handle.attempts).toBe(2);
    expect(handle.providerId).toBe('pb');
    await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(h.states.get(handle.runId)).toEqual([
      'admitted',
      'dispatched',
      'queued',
      'admitted',
      'dispatched',
      'streaming',
      'ended',
    ]);
    expect(h.retries).toEqual(['openai:node_lost']);
    expectRetryReleased(h);
  });

  it('refuses with the dispatch error when the retry inside submit finds no other provider', async () => {
    const h = retrySetup({ pa: 'ok', pb: 'ok' });
    for (const node of h.nodes) node.link.markClosed('connection reset');
    await expect(submitTo(h, 'r')).rejects.toMatchObject({ code: 'node_disconnected' });
    expect(h.retries).toEqual(['openai:node_lost']);
    expectRetryReleased(h);
  });

  it('never retries once output started: a mid-stream failure ends the run with its error', async () => {
    const h = retrySetup({ pa: 'mid_stream', pb: 'ok' });
    const handle = await submitTo(h, 'r');
    const events = await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'error', code: 'upstream_error' });
    expect(events.map((event) => event.part.type)).toEqual(['start', 'text-delta', 'error']);
    expect(requestsTo(h)).toEqual(['pa']);
    expect(handle.attempts).toBe(1);
    expect(h.retries).toEqual([]);
    // Output started: the provider served it, its circuit counts no failure.
    expect(h.circuits.state('pa')).toBe('closed');
    expectRetryReleased(h);
  });

  it('ends with the last failure when every provider failed (never the same provider twice)', async () => {
    const h = retrySetup({ pa: 'http_503', pb: 'http_503' }, 3);
    const handle = await submitTo(h, 'r');
    const events = await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'error', code: 'upstream_http_503' });
    expect(events.map((event) => event.part.type)).toEqual(['error']);
    expect(events[0]?.part).toMatchObject({ message: 'upstream_http_503 from rb' });
    expect(requestsTo(h)).toEqual(['pa', 'pb']);
    expect(handle.attempts).toBe(2);
    expect(h.retries).toEqual(['openai:upstream_5xx', 'openai:upstream_5xx']);
    expectRetryReleased(h);
  });

  it('takes no more than max_attempts dispatches, and a model override of 1 means no retry', async () => {
    const h = retrySetup({ pa: 'http_503', pb: 'ok' }, 1);
    const first = await submitTo(h, 'r');
    await collect(first);
    expect(await first.done).toMatchObject({ status: 'error', code: 'upstream_http_503' });
    const h2 = retrySetup({ pa: 'http_503', pb: 'ok' }, 2);
    const second = await submitTo(h2, 'once');
    await collect(second);
    expect(await second.done).toMatchObject({ status: 'error', code: 'upstream_http_503' });
    expect(requestsTo(h)).toEqual(['pa']);
    expect(requestsTo(h2)).toEqual(['pa']);
    expectRetryReleased(h);
    expectRetryReleased(h2);
  });

  it('does not retry a client error and does not count it against the provider', async () => {
    const h = retrySetup({ pa: 'bad_request', pb: 'ok' });
    for (let index = 0; index < 4; index += 1) {
      const handle = await submitTo(h, 'r');
      await collect(handle);
      expect(await handle.done).toMatchObject({ status: 'error', code: 'upstream_http_400' });
    }
    expect(h.circuits.state('pa')).toBe('closed');
    expect(h.retries).toEqual([]);
    expectRetryReleased(h);
  });

  it('retries a run whose node is lost before any output', async () => {
    const h = retrySetup({ pa: 'hold', pb: 'ok' });
    const handle = await submitTo(h, 'r');
    await waitFor(() => h.states.get(handle.runId)?.includes('streaming') ?? false);
    h.nodes[0]?.stop();
    h.nodes[0]?.link.markClosed('connection reset');
    const events = await collect(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(events.at(-1)?.part.type).toBe('complete');
    expect(h.retries).toEqual(['openai:node_lost']);
    expect(handle.providerId).toBe('pb');
    expectRetryReleased(h);
  });

  it('ends a run cancelled while its retry waits for capacity, holding nothing', async () => {
    const h = retrySetup({ pa: 'start_then_503', pb: 'hold' });
    // pb is busy with an explicit route's run: the retry waits in the pool's queue.
    const held = await holdOnNb(h);
    const handle = await submitTo(h, 'r');
    await waitFor(() => h.pool.totals().queued === 1);
    expect(h.states.get(handle.runId)?.at(-1)).toBe('queued');
    await handle.cancel('client gone');
    expect(await handle.done).toEqual({ status: 'cancelled', reason: 'client gone' });
    expect(h.pool.totals().queued).toBe(0);
    await held.cancel('done');
    await held.done;
    expectRetryReleased(h);
  });

  it('ends a run at its one deadline while its retry waits for capacity', async () => {
    const h = retrySetup({ pa: 'start_then_503', pb: 'hold' });
    const held = await holdOnNb(h);
    const handle = await submitTo(h, 'r', { timeoutMs: 1_000 });
    await waitFor(() => h.pool.totals().queued === 1);
    h.clock.advance(3_000);
    expect(await handle.done).toMatchObject({ status: 'error', code: 'run_timeout' });
    expect(h.pool.totals().queued).toBe(0);
    await held.cancel('done');
    await held.done;
    expectRetryReleased(h);
  });

  it('opens the circuit of a provider that keeps failing, after which runs go straight to the other one', async () => {
    const h = retrySetup({ pa: 'http_503', pb: 'ok' });
    for (let index = 0; index < 3; index += 1) {
      const handle = await submitTo(h, 'r');
      await collect(handle);
      expect(await handle.done).toMatchObject({ status: 'completed' });
      expect(handle.attempts).toBe(2);
    }
    expect(h.circuits.state('pa')).toBe('open');
    expect(h.pool.snapshot().find((status) => status.providerId === 'pa')?.health).toBe('open');
    const direct = await submitTo(h, 'r');
    await collect(direct);
    expect(direct.attempts).toBe(1);
    expect(direct.providerId).toBe('pb');
    // After the cool-down one probe goes to pa; its success closes the circuit.
    h.behaviour.pa = 'ok';
    h.clock.advance(RETRY_CONFIG.routing.circuit_breaker.cooldown_ms);
    const probe = await submitTo(h, 'r');
    await collect(probe);
    expect(probe.providerId).toBe('pa');
    expect(h.circuits.state('pa')).toBe('closed');
    expectRetryReleased(h);
  });
});
