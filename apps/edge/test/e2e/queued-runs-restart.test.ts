// A background response that was still queued when its edge died is placed again by the next edge process (issue
// 44, restart semantics): real `iop-edge serve` processes over one data_dir and a real node. The node's only vLLM
// provider (capacity 1) is busy with a slow response, so two more wait in its queue; the edge and the node are
// SIGKILLed; the edge restarts with no node connected. The older queued response's deadline (openai.timeout_sec,
// counted from its submission) passes while the edge waits for a provider: it ends `failed` naming the deadline.
// Then the node comes back and the younger one is placed again under its id: queued → completed, the backend
// receives its request. The slow one, which was running, ends `edge_restarted` as before.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  freePort,
  sleep,
  startEdgeProcess,
  waitUntil,
  waitUntilServed,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';
import { createBackgroundResponse, retrieveResponse } from '../support/background-responses.js';

jest.setTimeout(120_000);

const TIMEOUT_SEC = 20;
/** Between the two queued submissions: the older one's deadline passes before the younger one's. */
const GAP_MS = 8_000;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  dir = await group.tempDir('iop-e2e-requeue-');
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    transportListen: `127.0.0.1:${await freePort()}`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 1, queueTimeoutMs: 120_000 }],
  });
  config = { ...base, openai: { ...(base['openai'] as object), timeout_sec: TIMEOUT_SEC } };
});

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
});

type Body = Record<string, unknown>;

const createBackground = (edge: EdgeProcess, input: string): Promise<Body> =>
  createBackgroundResponse(edge, MODEL_QWEN, input);

async function retrieve(edge: EdgeProcess, id: unknown): Promise<Body> {
  const { status, body } = await retrieveResponse(edge, id);
  expect(status).toBe(200);
  return body;
}

async function statusBecomes(
  edge: EdgeProcess,
  id: unknown,
  status: string,
  timeoutMs: number,
): Promise<Body> {
  let last: Body = {};
  await waitUntil(
    async () => {
      last = await retrieve(edge, id);
      return last['status'] === status;
    },
    timeoutMs,
    () => `response ${String(id)} ${status}: ${JSON.stringify(last)}\n${edge.describe()}`,
  );
  return last;
}

const served = (edge: EdgeProcess): Promise<void> => waitUntilServed(edge, MODEL_QWEN);

function backendSaw(input: string): boolean {
  return vllm.requests.some((request) => request.rawBody.includes(input));
}

describe('queued background responses across an edge restart', () => {
  it('places a queued response again after a SIGKILL, and fails one whose deadline passed meanwhile', async () => {
    const first = await startEdgeProcess(group, dir, config, 'edge-1');
    // One data dir for both runs of the node: the edge recorded its identity.
    const nodeOptions = {
      retryIntervalMs: 300,
      maxRetries: 1000,
      dataDir: await group.tempDir('iop-e2e-n1-'),
    };
    const firstNode: TestProcess = await startFabricNode(group, first, nodeOptions);
    await served(first);

    vllm.setBehavior({ tokenCount: 4000, tokenDelayMs: 20 });
    const slow = await createBackground(first, 'slow blocker');
    await statusBecomes(first, slow['id'], 'in_progress', 15_000);
    // Taken before the request is sent: the edge counts the deadline from its own accept, which comes after this
    // and before the answer reaches the test (a timestamp taken after the answer lies up to its round trip late).
    const lateSentAt = Date.now();
    const late = await createBackground(first, 'late queued');
    await sleep(GAP_MS);
    const requeued = await createBackground(first, 'replace me');
    expect((await retrieve(first, late['id']))['status']).toBe('queued');
    expect((await retrieve(first, requeued['id']))['status']).toBe('queued');

    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    await firstNode.stop('SIGKILL');
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });

    // No node yet: both queued ones wait for a provider; the running one ended with the process.
    const second = await startEdgeProcess(group, dir, config, 'edge-2');
    expect(await retrieve(second, slow['id'])).toMatchObject({
      status: 'failed',
      error: { code: 'edge_restarted' },
    });
    expect((await retrieve(second, requeued['id']))['status']).toBe('queued');

    const failed = await statusBecomes(
      second,
      late['id'],
      'failed',
      lateSentAt + TIMEOUT_SEC * 1000 + 10_000 - Date.now(),
    );
    expect(failed).toMatchObject({ id: late['id'], background: true, error: { code: 'run_timeout' } });
    expect(JSON.stringify(failed['error'])).toContain(`${(TIMEOUT_SEC * 1000).toString()} ms deadline`);
    expect(Date.now()).toBeGreaterThanOrEqual(lateSentAt + TIMEOUT_SEC * 1000);
    expect((await retrieve(second, requeued['id']))['status']).toBe('queued');
    expect(backendSaw('replace me')).toBe(false);

    // The node comes back: the younger one is placed again, under its id, and completes.
    const nodeBackAt = Date.now();
    await startFabricNode(group, second, nodeOptions);
    const completed = await statusBecomes(second, requeued['id'], 'completed', 15_000);
    expect(completed).toMatchObject({ id: requeued['id'], background: true, status: 'completed' });
    expect(backendSaw('replace me')).toBe(true);
    expect(backendSaw('late queued')).toBe(false);
    process.stdout.write(
      `[e2e requeue] queued response completed ${(Date.now() - nodeBackAt).toString()} ms after its node was started again\n`,
    );
    await second.stop('SIGTERM');
  });
});
