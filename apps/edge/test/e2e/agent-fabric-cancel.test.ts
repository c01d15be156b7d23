// Issue 42 across processes: cancelling an agent run stops its in-flight model call at the backend within 1 s.
// A real edge and a real node; the agent is the testkit fake CLI (`--model-calls 1`) whose one call, a child run of
// the agent run, reaches the node's fake Ollama, which holds it (no answer for 20 s). Then the agent run is ended
// by its caller — (a) the OpenAI client of the agent run goes away (the streamed request is aborted), (b) an A2A
// task (`message/send`, non-blocking) is cancelled with `tasks/cancel` — and the fake Ollama must see its request
// closed by the client within 1 s of that.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer, RecordedRequest } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  metricSum,
  ProcessGroup,
  scrapeMetrics,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { AGENT_MODEL, agentFabricConfig } from '../support/agent-fabric-config.js';
import { startAgentStream } from '../support/agent-stream.js';
import {
  startFabricNode,
  startFakeBackends,
  stopFabric,
  waitForProvidersReady,
} from '../support/fabric-setup.js';

jest.setTimeout(40_000);

/** How long the fake Ollama holds a model call: far beyond the test's 1 s bound. */
const HOLD_MS = 20_000;
const CANCEL_BOUND_MS = 1000;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;

/** Waits for the agent's model call to be held at the fake Ollama; returns its record. */
async function heldCall(from: number): Promise<RecordedRequest> {
  let held: RecordedRequest | undefined;
  await waitUntil(
    () => {
      held = ollama.requests
        .slice(from)
        .find((request) => request.path === '/api/chat' && request.outcome === 'pending');
      return held !== undefined;
    },
    20_000,
    () => `the agent's model call at the fake Ollama\n${node.describe()}`,
  );
  return held as RecordedRequest;
}

/** Waits (bounded) until the held call is closed; how long after `since` the backend saw it closed. */
async function closedAfter(call: RecordedRequest, since: number): Promise<number> {
  await waitUntil(
    () => call.outcome !== 'pending',
    HOLD_MS / 2,
    () => `the held model call to be closed\n${edge.describe()}`,
  );
  expect(call.outcome).toBe('client-closed');
  return (call.closedAt ?? Date.now()) - since;
}

async function childRunsCancelled(): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_child_runs_total', {
    result: 'cancelled',
  });
}

async function everythingIdle(): Promise<void> {
  await waitUntil(
    async () =>
      (await admin.listProviders()).every((provider) => provider.inFlight === 0 && provider.queued === 0) &&
      ollama.activeRequests === 0,
    10_000,
    'every provider idle',
  );
}

let rpcId = 0;
async function a2a(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  rpcId += 1;
  const response = await fetch(`http://${edge.addresses.a2a}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method, params }),
  });
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!body.result) throw new Error(`${method}: ${JSON.stringify(body)}`);
  return body.result;
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends({ firstTokenDelayMs: HOLD_MS }));
  const dir = await group.tempDir('iop-e2e-agent-cancel-');
  const config = agentFabricConfig({
    dataDir: `${dir}/data`,
    node: { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url },
    calls: 1,
  });
  // A2A tasks run the agent profile on n1.
  config['a2a'] = {
    enabled: true,
    listen: '127.0.0.1:0',
    node: 'n1',
    adapter: 'agents',
    target: 'fab',
    timeout_sec: 60,
  };
  edge = await startEdgeProcess(group, dir, config);
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  // The probes of the held Ollama answer at once (only generations are held).
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
}, 60_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('cancelling an agent run stops its in-flight model call at the backend', () => {
  it('within 1 s of the OpenAI client of the agent run going away', async () => {
    const cancelledBefore = await childRunsCancelled();
    const from = ollama.requests.length;
    const agent = await startAgentStream(edge.addresses.openai, AGENT_MODEL, 'openai disconnect');
    const call = await heldCall(from);
    expect(agent.lines().some((line) => line.startsWith('MODEL_CALL '))).toBe(false);
    const abortedAt = Date.now();
    agent.abort();
    const after = await closedAfter(call, abortedAt);
    process.stderr.write(`[e2e agent-fabric-cancel] OpenAI disconnect → backend closed in ${after} ms\n`);
    expect(after).toBeLessThan(CANCEL_BOUND_MS);
    await everythingIdle();
    expect(await childRunsCancelled()).toBe(cancelledBefore + 1);
  });

  it('within 1 s of an A2A tasks/cancel of the agent task', async () => {
    const cancelledBefore = await childRunsCancelled();
    const from = ollama.requests.length;
    const task = await a2a('message/send', {
      message: {
        kind: 'message',
        messageId: 'agent-cancel-1',
        role: 'user',
        parts: [{ kind: 'text', text: 'a2a cancel' }],
      },
      configuration: { blocking: false },
    });
    const taskId = String(task['id']);
    const call = await heldCall(from);
    const cancelAt = Date.now();
    const cancelled = await a2a('tasks/cancel', { id: taskId });
    expect((cancelled['status'] as { state?: string }).state).toBe('canceled');
    const after = await closedAfter(call, cancelAt);
    process.stderr.write(`[e2e agent-fabric-cancel] A2A tasks/cancel → backend closed in ${after} ms\n`);
    expect(after).toBeLessThan(CANCEL_BOUND_MS);
    await everythingIdle();
    expect(await childRunsCancelled()).toBe(cancelledBefore + 1);
  });
});
