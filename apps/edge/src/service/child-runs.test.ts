// Child runs (an agent's model calls) through the real service, supervisor, placement and pool, on a scripted node
// behind a real NodeLink and a manual clock: nested admission, the capacity rule (no deadlock whatever the
// capacities), charging the parent's key, the parent's end cancelling its children, tracing and retries.
// A deadlock shows as a test that never sees its children complete (the manual clock never times a queue out).
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import type { TraceSpan, Tracing } from '@iop/tracing';
import { create, type RunRequest } from '@iop/wire';
import { ManualClock } from '@iop/clock';
import { createEventBus } from '../events/event-bus.js';
import { createGovernor, type Governor } from '../governance/governor.js';
import type { Principal } from '../governance/principal.js';
import type { UsageRecord } from '../governance/usage-store.js';
import { silentLogger } from '../logging.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { SessionSlots } from '../placement/session-slots.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import { ScriptedNode, type NodeScript } from '../test-support/scripted-node.js';
import { createEdgeService, type EdgeServiceImpl } from './edge-service.js';
import { ServiceError } from './errors.js';
import type { ChildRunResult } from './run-supervisor.js';
import type { RunHandle, SubmitOptions } from './types.js';

function config(options: {
  nodeLimit: number;
  modelCapacity: number;
  agentCapacity: number;
  nodeB: boolean;
}) {
  const result = parseConfigText(
    `
edge: { id: edge-a }
refresh: { enabled: false, admin_token: "" }
models:
  - { id: agent, providers: { pcli: "claude" } }
  - { id: m, providers: { pa: "m1", pb: "m1" } }
nodes:
  - id: na
    runtime: { max_concurrency: ${options.nodeLimit} }
    adapters:
      ollama: { base_url: "http://127.0.0.1:11434" }
      instances:
        - { name: agents, type: cli, profiles: { claude: { command: claude } } }
    providers:
      - { id: pcli, type: cli, category: cli, adapter: agents, models: ["claude"], capacity: ${options.agentCapacity} }
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: ${options.modelCapacity} }
  - id: nb
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pb, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: 1, enabled: ${options.nodeB} }
`,
    'child-runs-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

/** Agent runs (the cli target) wait for the test; a model call answers after a few ms with 3 + 2 tokens. */
const script: NodeScript = (request: RunRequest) =>
  request.messages.at(-1)?.content === 'fail' && request.providerId === 'pa'
    ? {
        parts: [
          {
            type: 'error',
            code: 'upstream_http_503',
            message: 'upstream_http_503 from m1',
            retryable: true,
            backendMs: 0,
          },
        ],
      }
    : request.target === 'claude'
      ? {
          parts: [
            { type: 'start', sessionId: request.sessionId, adapter: request.adapter, target: request.target },
            { type: 'usage', usage: create.usage({ promptTokens: 10, completionTokens: 1 }) },
          ],
        }
      : {
          delayMs: request.messages.at(-1)?.content === 'hold' ? 0 : 2,
          parts: [
            { type: 'start', sessionId: request.sessionId, adapter: request.adapter, target: request.target },
            { type: 'text-delta', text: 'ok' },
            { type: 'usage', usage: create.usage({ promptTokens: 3, completionTokens: 2 }) },
            ...(request.messages.at(-1)?.content === 'hold'
              ? []
              : [{ type: 'complete' as const, detail: 'stop', finishReason: 'stop', backendMs: 1 }]),
          ],
        };

/** Records each span's name and parent; each span's traceparent is unique. */
class RecordingTracing implements Tracing {
  readonly enabled = true;
  readonly spans: { name: string; parent: string | undefined; traceparent: string }[] = [];

  startSpan(name: string, options: { parent?: string | undefined } = {}): TraceSpan {
    const traceparent = `00-${'1'.repeat(32)}-${String(this.spans.length + 1).padStart(16, '0')}-01`;
    this.spans.push({ name, parent: options.parent, traceparent });
    return { traceId: '1'.repeat(32), traceparent, setAttributes: () => undefined, end: () => undefined };
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

interface Harness {
  clock: ManualClock;
  node: ScriptedNode;
  nodeB: ScriptedNode | undefined;
  pool: ProviderPool;
  sessions: SessionSlots;
  governor: Governor;
  service: EdgeServiceImpl;
  usage: UsageRecord[];
  results: ChildRunResult[];
  /** Each dispatched child's model and queue wait in seconds (iop_child_queue_wait_seconds). */
  queueWaits: [string, number][];
  tracing: RecordingTracing;
}

const harnesses: Harness[] = [];

function setup(
  options: {
    nodeLimit?: number;
    modelCapacity?: number;
    agentCapacity?: number;
    tracing?: boolean;
    /** Node nb with a second provider of m (pb, capacity 1). */
    nodeB?: boolean;
  } = {},
): Harness {
  const clock = new ManualClock();
  const registry = createNodeRegistry();
  const node = new ScriptedNode('na', script);
  registry.add(node.link);
  const nodeB = options.nodeB ? new ScriptedNode('nb', script) : undefined;
  if (nodeB) registry.add(nodeB.link);
  const events = createEventBus({ replaySize: 16, queueSize: 256 });
  const pool = createProviderPool({
    config: config({
      nodeLimit: options.nodeLimit ?? 2,
      modelCapacity: options.modelCapacity ?? 2,
      agentCapacity: options.agentCapacity ?? 4,
      nodeB: options.nodeB ?? false,
    }),
    nodes: registry,
    events,
    clock,
    pollIntervalMs: 20,
  });
  pool.start();
  const sessions = new SessionSlots();
  const usage: UsageRecord[] = [];
  const governor = createGovernor({
    clock,
    sink: { record: (record) => usage.push(record) },
    spent: { tokensSince: () => 0 },
  });
  const results: ChildRunResult[] = [];
  const queueWaits: [string, number][] = [];
  const tracing = new RecordingTracing();
  const service = createEdgeService({
    registry,
    pool,
    events,
    logger: silentLogger,
    clock,
    sessions,
    governor,
    retryAttempts: () => 2,
    ...(options.tracing ? { tracing } : {}),
    metrics: {
      dispatched: () => undefined,
      rejected: () => undefined,
      retried: () => undefined,
      childEnded: (result) => results.push(result),
      childQueued: (model, seconds) => queueWaits.push([model, seconds]),
    },
  });
  const harness = {
    clock,
    node,
    nodeB,
    pool,
    sessions,
    governor,
    service,
    usage,
    results,
    queueWaits,
    tracing,
  };
  harnesses.push(harness);
  return harness;
}

afterEach(() => {
  for (const harness of harnesses.splice(0)) {
    harness.node.stop();
    harness.nodeB?.stop();
    harness.pool.close();
  }
});

const AGENT_KEY: Principal = {
  id: 'key-agent',
  models: undefined,
  rpm: null,
  tpm: null,
  maxConcurrent: 4,
  tokenBudget: null,
  weight: 1,
  priority: 'interactive',
};

const OTHER_KEY: Principal = { ...AGENT_KEY, id: 'key-other', maxConcurrent: null };

function submitAgent(h: Harness, principal: Principal = AGENT_KEY, timeoutMs?: number): Promise<RunHandle> {
  return h.service.submitRun(
    { kind: 'model', model: 'agent' },
    {
      session: { kind: 'slot', baseId: 'agent' },
      messages: [create.chatMessage({ role: 'user', content: 'fix the bug' })],
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    },
    { surface: 'openai', principal },
  );
}

/** A model call of `parent` as the tunnel submits it (the surface passes the parent's principal, or another). */
function submitChild(
  h: Harness,
  parent: { runId: string; nodeId: string },
  text = 'call',
  options: Partial<SubmitOptions> = {},
): Promise<RunHandle> {
  return h.service.submitRun(
    { kind: 'model', model: 'm' },
    {
      session: { kind: 'slot', baseId: 'call' },
      messages: [create.chatMessage({ role: 'user', content: text })],
    },
    { surface: 'openai', principal: h.service.resolveParent(parent)?.principal, parent, ...options },
  );
}

async function waitFor(predicate: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !predicate(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!predicate()) throw new Error('condition not met');
}

function endAgent(h: Harness, runId: string): void {
  h.node.emit(runId, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
}

function expectAllReleased(h: Harness): void {
  expect(h.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  expect(h.governor.snapshot().every((entry) => entry.inFlight === 0)).toBe(true);
  expect(h.sessions.held).toBe(0);
  expect(h.service.inFlightRuns).toBe(0);
  expect(h.service.agentRuns()).toEqual([]);
  expect(h.clock.pending).toBe(0);
  expect(h.node.open).toBe(0);
}

describe('child runs: the capacity rule', () => {
  it('completes every model call of 4 agents on a node of max_concurrency 2, never over provider capacity', async () => {
    const h = setup({ nodeLimit: 2, modelCapacity: 2, agentCapacity: 4 });
    const agents = [submitAgent(h), submitAgent(h), submitAgent(h), submitAgent(h)];
    const completed: string[] = [];
    const childrenOf = new Map<string, number>();
    /** Each agent, once running, makes 5 model calls (2 at a time), then ends. */
    const work = agents.map(async (submitted) => {
      const agent = await submitted;
      const parent = { runId: agent.runId, nodeId: agent.nodeId };
      const call = async (index: number) => {
        const child = await submitChild(h, parent, `call ${index}`);
        // The agent still holds its node slot while its call runs: the call rides on it.
        expect(h.pool.nodeLoads().find((load) => load.nodeId === 'na')?.inFlight).toBeLessThanOrEqual(2);
        const outcome = await child.done;
        expect(outcome).toMatchObject({ status: 'completed' });
        completed.push(child.runId);
        childrenOf.set(agent.runId, (childrenOf.get(agent.runId) ?? 0) + 1);
      };
      await Promise.all([call(1), call(2)]);
      await Promise.all([call(3), call(4), call(5)]);
      endAgent(h, agent.runId);
      return agent.done;
    });
    const outcomes = await Promise.all(work);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(completed).toHaveLength(20);
    expect([...childrenOf.values()]).toEqual([5, 5, 5, 5]);
    // Provider capacity is never exceeded; the node never ran more than 2 agents at once.
    expect(h.node.peak.get('pa')).toBeLessThanOrEqual(2);
    expect(h.node.peak.get('pcli')).toBe(2);
    // Every model call reached the node as a child of its agent (RunRequest.parent_run_id).
    const childRequests = h.node.requests.filter((request) => request.target === 'm1');
    expect(childRequests).toHaveLength(20);
    expect(new Set(childRequests.map((request) => request.parentRunId)).size).toBe(4);
    expect(h.results).toEqual(Array.from({ length: 20 }, () => 'completed'));
    await waitFor(() => h.service.inFlightRuns === 0);
    expectAllReleased(h);
  });

  it('serves a waiting child before a new top-level run of the same model', async () => {
    const h = setup({ nodeLimit: 3, modelCapacity: 1 });
    const agent = await submitAgent(h);
    const parent = { runId: agent.runId, nodeId: 'na' };
    const first = await submitChild(h, parent, 'hold');
    // The model's one slot is taken: a top-level run of another key queues first, then a child.
    const order: string[] = [];
    const topLevel = h.service
      .submitRun(
        { kind: 'model', model: 'm' },
        {
          session: { kind: 'slot', baseId: 'o' },
          messages: [create.chatMessage({ role: 'user', content: 'x' })],
        },
        { surface: 'openai', principal: OTHER_KEY },
      )
      .then((handle) => {
        order.push('top-level');
        return handle;
      });
    await waitFor(() => h.pool.totals().queued === 1);
    const second = submitChild(h, parent, 'call').then((handle) => {
      order.push('child');
      return handle;
    });
    await waitFor(() => h.pool.totals().queued === 2);
    await first.cancel('done');
    await (
      await second
    ).done;
    await (
      await topLevel
    ).done;
    expect(order).toEqual(['child', 'top-level']);
    endAgent(h, agent.runId);
    await agent.done;
    await waitFor(() => h.service.inFlightRuns === 0);
    expectAllReleased(h);
  });

  it('reports the queue wait of each dispatched child by model, and none for other runs', async () => {
    const h = setup({ nodeLimit: 3, modelCapacity: 1 });
    const agent = await submitAgent(h);
    const parent = { runId: agent.runId, nodeId: 'na' };
    const first = await submitChild(h, parent, 'hold');
    const second = submitChild(h, parent, 'call');
    await waitFor(() => h.pool.totals().queued === 1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    await first.cancel('done');
    await (
      await second
    ).done;
    endAgent(h, agent.runId);
    await agent.done;
    expect(h.queueWaits.map(([model]) => model)).toEqual(['m', 'm']);
    const [[, immediate], [, waited]] = h.queueWaits as [[string, number], [string, number]];
    expect(immediate).toBeLessThan(0.05);
    expect(waited).toBeGreaterThanOrEqual(0.05);
    expect(waited).toBeLessThan(5);
    await waitFor(() => h.service.inFlightRuns === 0);
    expectAllReleased(h);
  });
});

describe('child runs: nested admission', () => {
  it('refuses a child whose parent is not live, or whose call came over another node', async () => {
    const h = setup();
    await expect(submitChild(h, { runId: 'run-gone', nodeId: 'na' })).rejects.toMatchObject({
      code: 'parent_not_live',
    });
    const agent = await submitAgent(h);
    expect(h.service.resolveParent({ runId: agent.runId, nodeId: 'nb' })).toBeUndefined();
    await expect(submitChild(h, { runId: agent.runId, nodeId: 'nb' })).rejects.toBeInstanceOf(ServiceError);
    await expect(submitChild(h, { runId: agent.runId, nodeId: 'nb' })).rejects.toMatchObject({
      code: 'parent_not_live',
    });
    endAgent(h, agent.runId);
    await agent.done;
    expect(h.service.resolveParent({ runId: agent.runId, nodeId: 'na' })).toBeUndefined();
    await expect(submitChild(h, { runId: agent.runId, nodeId: 'na' })).rejects.toMatchObject({
      code: 'parent_not_live',
    });
    expect(h.results).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expectAllReleased(h);
  });

  it('refuses a child that names a model served by a cli provider (it would wait for agent capacity)', async () => {
    const h = setup();
    const agent = await submitAgent(h);
    const parent = { runId: agent.runId, nodeId: 'na' };
    await expect(
      h.service.submitRun(
        { kind: 'model', model: 'agent' },
        {
          session: { kind: 'slot', baseId: 'x' },
          messages: [create.chatMessage({ role: 'user', content: 'x' })],
        },
        { surface: 'openai', parent },
      ),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    endAgent(h, agent.runId);
    await agent.done;
    expectAllReleased(h);
  });

  it("admits a child under its parent's key whatever principal the call carried, without its max_concurrent", async () => {
    const h = setup();
    const oneSlot: Principal = { ...AGENT_KEY, maxConcurrent: 1 };
    const agent = await submitAgent(h, oneSlot);
    const parent = { runId: agent.runId, nodeId: 'na' };
    expect(h.service.resolveParent(parent)).toEqual({ principal: oneSlot });
    // The key's one slot is the agent's; its model call still goes, charged to the same key.
    const child = await submitChild(h, parent, 'call', { principal: OTHER_KEY });
    expect(await child.done).toMatchObject({ status: 'completed' });
    endAgent(h, agent.runId);
    await agent.done;
    // The child's record is the agent's key's and names its parent; the agent's record adds the child's tokens
    // beside its own, and its own are what its CLI reported (10 in, 1 out) less its calls' (3 in, 2 out): the key
    // is charged every token once.
    const records = h.usage.map((record) => [
      record.runId,
      record.principal,
      record.inputTokens + record.outputTokens,
      record.parentRunId,
      record.childTokens,
    ]);
    expect(records).toEqual([
      [child.runId, 'key-agent', 5, agent.runId, 0],
      [agent.runId, 'key-agent', 7, '', 5],
    ]);
    expectAllReleased(h);
  });

  it("refuses the next child with budget_exhausted once the parent's key spent its budget", async () => {
    const h = setup();
    const budgeted: Principal = { ...AGENT_KEY, tokenBudget: { tokens: 10, per: 'day' } };
    const agent = await submitAgent(h, budgeted);
    const parent = { runId: agent.runId, nodeId: 'na' };
    const first = await submitChild(h, parent, 'call');
    expect(await first.done).toMatchObject({ status: 'completed' });
    const second = await submitChild(h, parent, 'call');
    expect(await second.done).toMatchObject({ status: 'completed' });
    await expect(submitChild(h, parent, 'call')).rejects.toMatchObject({ code: 'budget_exhausted' });
    expect(h.results).toEqual(['completed', 'completed', 'rejected']);
    endAgent(h, agent.runId);
    await agent.done;
    expectAllReleased(h);
  });

  it("shows the agent run with its live children and their tokens, and adds the children's tokens to it", async () => {
    const h = setup();
    const agent = await submitAgent(h);
    await waitFor(() => h.node.requests.length === 1);
    const parent = { runId: agent.runId, nodeId: 'na' };
    const done = await submitChild(h, parent, 'call');
    await done.done;
    const held = await submitChild(h, parent, 'hold');
    await waitFor(() => h.service.agentRuns()[0]?.childTokens === 10);
    expect(h.service.agentRuns()).toEqual([
      {
        runId: agent.runId,
        nodeId: 'na',
        principal: 'key-agent',
        model: 'agent',
        liveChildren: 1,
        children: 2,
        // Its CLI's 10 + 1 less its calls' 6 + 4 (they are counted as the calls').
        tokens: 4,
        childTokens: 10,
      },
    ]);
    await held.cancel('done');
    await held.done;
    expect(h.service.agentRuns()[0]).toMatchObject({ liveChildren: 0, children: 2, childTokens: 10 });
    endAgent(h, agent.runId);
    await agent.done;
    expectAllReleased(h);
  });
});

describe("child runs: the parent's end", () => {
  it('cancels its children when the agent completes, is cancelled, reaches its deadline or its node is lost', async () => {
    for (const end of ['complete', 'cancel', 'deadline', 'node-lost'] as const) {
      const h = setup({ modelCapacity: 1 });
      const agent = await submitAgent(h, AGENT_KEY, end === 'deadline' ? 1_000 : undefined);
      const parent = { runId: agent.runId, nodeId: 'na' };
      const running = await submitChild(h, parent, 'hold');
      // The model's one slot is taken: this one waits in the queue.
      const queued = submitChild(h, parent, 'call');
      const refused = queued.then(
        () => 'submitted',
        (error: ServiceError) => error.code,
      );
      await waitFor(() => h.pool.totals().queued === 1);
      if (end === 'complete') endAgent(h, agent.runId);
      else if (end === 'cancel') await h.service.cancelRun(agent.runId, 'user');
      else if (end === 'deadline')
        h.clock.advance(3_000); // timeoutMs + the 2 s grace
      else h.node.link.markClosed('connection reset');
      await agent.done;
      if (end === 'node-lost') {
        // Lost with its node, or — when its retry was waiting for capacity — cancelled with its parent.
        expect(['error', 'cancelled']).toContain((await running.done).status);
      } else {
        expect(h.node.cancelled).toContain(running.runId);
        expect(await running.done).toEqual({
          status: 'cancelled',
          reason: `parent run ${agent.runId} ended`,
        });
      }
      expect(await refused).toBe('aborted');
      await waitFor(() => h.service.inFlightRuns === 0);
      expect(h.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
      expect(h.sessions.held).toBe(0);
      expect(h.clock.pending).toBe(0);
    }
  });
});

describe('child runs: tracing and retries', () => {
  it("continues the agent run's span", async () => {
    const h = setup({ tracing: true });
    const agent = await submitAgent(h);
    const agentSpan = h.tracing.spans.find((span) => span.name === 'iop.edge.run');
    const child = await submitChild(h, { runId: agent.runId, nodeId: 'na' }, 'call');
    await child.done;
    const childSpans = h.tracing.spans.slice(h.tracing.spans.indexOf(agentSpan as never) + 1);
    expect(childSpans.map((span) => [span.name, span.parent])).toEqual([
      ['iop.edge.admission', agentSpan?.traceparent],
      ['iop.edge.run', agentSpan?.traceparent],
    ]);
    expect(h.node.requests.at(-1)?.traceparent).toBe(childSpans[1]?.traceparent);
    endAgent(h, agent.runId);
    await agent.done;
    expectAllReleased(h);
  });

  it('places a child that failed before its first byte on another provider, as a child there too', async () => {
    const h = setup({ nodeB: true, modelCapacity: 1 });
    const agent = await submitAgent(h);
    const parent = { runId: agent.runId, nodeId: 'na' };
    const child = await submitChild(h, parent, 'fail');
    expect(await child.done).toMatchObject({ status: 'completed' });
    expect(child.attempts).toBe(2);
    expect(child.providerId).toBe('pb');
    expect(h.nodeB?.requests.map((request) => request.parentRunId)).toEqual([agent.runId]);
    expect(h.results).toEqual(['completed']);
    expect(h.service.agentRuns()[0]).toMatchObject({ liveChildren: 0, children: 1 });
    endAgent(h, agent.runId);
    await agent.done;
    expectAllReleased(h);
  });
});
