// Cluster failover of long-running work (issue 44): a real nats-server and two real `iop-edge serve` processes
// with one fabric key; node n1 on edge 1. On edge 1: a background response that completed, an A2A task that
// finished, and a background response still streaming (slow fake backend). Edge 1 is SIGKILLed. Then, from edge 2
// (bounded in time):
//   1. GET /v1/responses/{id} with the same key answers the completed response as it was; another key gets 404;
//   2. A2A tasks/get answers the finished task as it was;
//   3. the response edge 1 left streaming is `failed` with `error.code` `edge_lost`, naming both edges;
// and edge 1, started again on its data_dir, answers that response with the same failover ending (the first
// ending in the fabric wins), not with its own restart ending.
// Skipped with one printed line when nats-server is missing (fails under CI=true; `.ci/run` installs it).
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../../src/test-support/nats-server.js';
import {
  ProcessGroup,
  freePort,
  metricSum,
  scrapeMetrics,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import {
  MODEL_QWEN,
  VLLM_SERVED,
  clusterSection,
  fabricConfig,
  writeFabricKeyFile,
} from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';
import { createBackgroundResponse, retrieveResponse } from '../support/background-responses.js';

jest.setTimeout(150_000);

const available = natsServerAvailable('cluster failover e2e');
const suite = available ? describe : describe.skip;

const KEY_A = 'sk-e2e-failover-owner-0001';
const KEY_B = 'sk-e2e-failover-other-0002';

type Body = Record<string, unknown>;

const group = new ProcessGroup();
let nats: NatsServer;
let ollama: FakeServer;
let vllm: FakeServer;

async function edgeConfig(edgeId: string, dir: string): Promise<Record<string, unknown>> {
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    transportListen: `127.0.0.1:${await freePort()}`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
  });
  return {
    ...base,
    edge: { ...(base.edge as Record<string, unknown>), id: edgeId },
    openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 60, api_keys: [KEY_A, KEY_B] },
    a2a: { enabled: true, listen: '127.0.0.1:0', node: 'n1', adapter: 'vllm', target: VLLM_SERVED },
    cluster: clusterSection(nats.url, writeFabricKeyFile(dir)),
  };
}

const createBackground = (edge: EdgeProcess, input: string): Promise<Body> =>
  createBackgroundResponse(edge, MODEL_QWEN, input, KEY_A);
const retrieve = (edge: EdgeProcess, id: string, key = KEY_A): Promise<{ status: number; body: Body }> =>
  retrieveResponse(edge, id, key);

let rpcId = 0;
async function a2aCall(edge: EdgeProcess, method: string, params: Body): Promise<Body> {
  rpcId += 1;
  const response = await fetch(`http://${edge.addresses.a2a}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await response.json()) as { result?: Body; error?: unknown };
  if (!body.result) throw new Error(`${method} answered ${JSON.stringify(body)}`);
  return body.result;
}

async function mirrored(edge: EdgeProcess): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_run_record_mirror_writes_total', {
    result: 'ok',
  });
}

suite('cluster failover: another edge answers for a killed edge’s long-running work', () => {
  let dir1: string;
  let config1: Record<string, unknown>;
  let edge1: EdgeProcess;
  let edge2: EdgeProcess;

  beforeAll(async () => {
    nats = await startNatsServer();
    ({ ollama, vllm } = await startFakeBackends());
    dir1 = await group.tempDir('iop-e2e-failover-edge-1-');
    const dir2 = await group.tempDir('iop-e2e-failover-edge-2-');
    config1 = await edgeConfig('edge-1', dir1);
    edge1 = await startEdgeProcess(group, dir1, config1, 'edge-1');
    edge2 = await startEdgeProcess(group, dir2, await edgeConfig('edge-2', dir2), 'edge-2');
    await startFabricNode(group, edge1, { retryIntervalMs: 300, maxRetries: 1000 });
    await waitUntil(
      async () => {
        const response = await fetch(`${edge1.addresses.openai}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
          body: JSON.stringify({ model: MODEL_QWEN, messages: [{ role: 'user', content: 'ready' }] }),
        });
        await response.text();
        return response.status === 200;
      },
      30_000,
      () => `edge-1 serves\n${edge1.describe()}`,
    );
  }, 90_000);

  afterAll(async () => {
    await group.close();
    await ollama?.close();
    await vllm?.close();
    await nats?.stop();
  });

  it('serves the finished runs from edge 2 after edge 1 is killed, fails the unfinished one, and keeps it so', async () => {
    // Edge 1's work: a completed background response, a finished A2A task, a response still streaming.
    const done = await createBackground(edge1, 'keep me');
    let completed: Body = {};
    await waitUntil(
      async () => {
        completed = (await retrieve(edge1, String(done['id']))).body;
        return completed['status'] === 'completed';
      },
      15_000,
      'background response completed',
    );
    const task = await a2aCall(edge1, 'message/send', {
      message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'task' }] },
    });
    expect(task).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    // While edge 1 lives, edge 2 asks it (not the mirror).
    expect(await retrieve(edge2, String(done['id']))).toEqual({ status: 200, body: completed });
    vllm.setBehavior({ tokenCount: 5000, tokenDelayMs: 20 });
    const slow = await createBackground(edge1, 'slow');
    await waitUntil(
      async () => (await retrieve(edge1, String(slow['id']))).body['status'] === 'in_progress',
      15_000,
      'slow response in progress',
    );
    // Every record is copied to the fabric (completed response: 3 writes, task: 2+, slow: 2).
    await waitUntil(async () => (await mirrored(edge1)) >= 6, 10_000, 'run records mirrored');

    expect((await edge1.stop('SIGKILL')).signal).toBe('SIGKILL');
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
    const killedAt = Date.now();

    // 1. The completed response, from edge 2, once edge 1 left the cluster.
    let answer = { status: 0, body: {} as Body };
    await waitUntil(
      async () => {
        answer = await retrieve(edge2, String(done['id']));
        return answer.status === 200;
      },
      20_000,
      () => `edge 2 answers for edge 1: ${JSON.stringify(answer)}\n${edge2.describe()}`,
    );
    const failoverMs = Date.now() - killedAt;
    expect(answer.body).toEqual(completed);
    expect((await retrieve(edge2, String(done['id']), KEY_B)).status).toBe(404);
    expect((await retrieve(edge2, 'resp_unknown')).status).toBe(404);

    // 2. The finished A2A task.
    expect(await a2aCall(edge2, 'tasks/get', { id: task['id'] })).toEqual(task);

    // 3. The response edge 1 left streaming: failed, naming the failover; the same on every later read.
    const lost = await retrieve(edge2, String(slow['id']));
    expect(lost.status).toBe(200);
    expect(lost.body).toMatchObject({ id: slow['id'], status: 'failed', error: { code: 'edge_lost' } });
    const message = String((lost.body['error'] as Body)['message']);
    expect(message).toContain('edge-1');
    expect(message).toContain('edge-2');
    expect(await retrieve(edge2, String(slow['id']))).toEqual(lost);
    expect((await retrieve(edge2, String(slow['id']), KEY_B)).status).toBe(404);
    process.stdout.write(`[e2e failover] edge 2 answered for killed edge 1 after ${failoverMs} ms\n`);

    // Edge 1 comes back on its data_dir: it takes the failover's ending instead of its own restart ending.
    edge1 = await startEdgeProcess(group, dir1, config1, 'edge-1-again');
    let back = { status: 0, body: {} as Body };
    await waitUntil(
      async () => {
        back = await retrieve(edge1, String(slow['id']));
        return JSON.stringify(back.body) === JSON.stringify(lost.body);
      },
      15_000,
      () => `edge 1 takes the failover ending: ${JSON.stringify(back)}\n${edge1.describe()}`,
    );
    expect(await retrieve(edge1, String(done['id']))).toEqual({ status: 200, body: completed });
    expect(await retrieve(edge2, String(slow['id']))).toEqual(lost);
    expect(failoverMs).toBeLessThanOrEqual(20_000);
  });
});
