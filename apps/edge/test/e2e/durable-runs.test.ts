// Long-running work survives an edge restart (issue 44): real `iop-edge serve` processes over one data_dir. A
// background response and an A2A task that finished are returned by the next process exactly as before; a
// background response whose edge was SIGKILLed while its run streamed (slow fake backend) is, after the restart,
// `failed` with `error.code` `edge_restarted` — measured from the new process's start, within 10 s.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  freePort,
  startEdgeProcess,
  waitUntil,
  waitUntilServed,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { MODEL_QWEN, VLLM_SERVED, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';
import { createBackgroundResponse, retrieveResponse } from '../support/background-responses.js';

jest.setTimeout(120_000);

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  dir = await group.tempDir('iop-e2e-durable-');
  config = {
    ...fabricConfig({
      dataDir: `${dir}/data`,
      transportListen: `127.0.0.1:${await freePort()}`,
      nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
    }),
    a2a: { enabled: true, listen: '127.0.0.1:0', node: 'n1', adapter: 'vllm', target: VLLM_SERVED },
  };
});

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
});

type Body = Record<string, unknown>;

const createBackground = (edge: EdgeProcess, input: string): Promise<Body> =>
  createBackgroundResponse(edge, MODEL_QWEN, input);
const retrieve = (edge: EdgeProcess, id: string): Promise<{ status: number; body: Body }> =>
  retrieveResponse(edge, id);

let rpcId = 0;
async function a2aCall(edge: EdgeProcess, method: string, params: Body): Promise<Body> {
  rpcId += 1;
  const response = await fetch(`http://${edge.addresses.a2a}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method, params }),
  });
  const body = (await response.json()) as { result?: Body; error?: unknown };
  if (!body.result) throw new Error(`${method} answered ${JSON.stringify(body)}`);
  return body.result;
}

const served = (edge: EdgeProcess): Promise<void> => waitUntilServed(edge, MODEL_QWEN);

describe('durable records across edge restarts', () => {
  it('serves finished runs after a restart, and fails a SIGKILLed run naming the restart', async () => {
    const first = await startEdgeProcess(group, dir, config, 'edge-1');
    await startFabricNode(group, first, { retryIntervalMs: 300, maxRetries: 1000 });
    await served(first);

    const queued = await createBackground(first, 'keep me');
    let completed: Body = {};
    await waitUntil(
      async () => {
        completed = (await retrieve(first, String(queued['id']))).body;
        return completed['status'] === 'completed';
      },
      15_000,
      'background response completed',
    );
    const task = await a2aCall(first, 'message/send', {
      message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'task' }] },
    });
    expect(task).toMatchObject({ kind: 'task', status: { state: 'completed' } });

    // 1. A clean restart: the finished runs are answered as before.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    const second = await startEdgeProcess(group, dir, config, 'edge-2');
    expect(await retrieve(second, String(queued['id']))).toEqual({ status: 200, body: completed });
    expect(await a2aCall(second, 'tasks/get', { id: task['id'] })).toEqual(task);
    expect((await retrieve(second, 'resp_unknown')).status).toBe(404);

    // 2. A crash mid-run: the next process ends the response as failed, naming the restart.
    await served(second);
    vllm.setBehavior({ tokenCount: 2000, tokenDelayMs: 20 });
    const slow = await createBackground(second, 'slow');
    await waitUntil(
      async () => (await retrieve(second, String(slow['id']))).body['status'] === 'in_progress',
      15_000,
      'slow response in progress',
    );
    expect((await second.stop('SIGKILL')).signal).toBe('SIGKILL');
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
    const restartedAt = Date.now();
    const third = await startEdgeProcess(group, dir, config, 'edge-3');
    let failed: Body = {};
    await waitUntil(
      async () => {
        failed = (await retrieve(third, String(slow['id']))).body;
        return failed['status'] === 'failed';
      },
      10_000,
      () => `slow response failed after the restart: ${JSON.stringify(failed)}\n${third.describe()}`,
    );
    const terminalMs = Date.now() - restartedAt;
    expect(failed).toMatchObject({
      id: slow['id'],
      status: 'failed',
      background: true,
      error: { code: 'edge_restarted' },
    });
    expect(JSON.stringify(failed['error'])).toContain('edge-e2e');
    // The finished ones are still there after the crash.
    expect((await retrieve(third, String(queued['id']))).body).toEqual(completed);
    process.stdout.write(
      `[e2e durable] SIGKILLed response terminal ${terminalMs} ms after the restart began\n`,
    );
    expect(terminalMs).toBeLessThanOrEqual(10_000);
    await third.stop('SIGTERM');
  });
});
