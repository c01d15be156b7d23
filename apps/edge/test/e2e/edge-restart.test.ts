// Edge restart (issue 10): a real node process re-registers by itself within one retry interval after the edge
// process comes back — after a clean SIGTERM shutdown (Goodbye `shutdown`) and after a SIGKILL crash (the socket
// just dies) — and serves OpenAI requests again through both of its providers, without any user action. The
// delay is measured from the edge's own log: `node transport listening` → `node registered`. A stream in flight
// when the edge crashes is aborted by the node: its upstream request is closed.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  freePort,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { MODEL_LLAMA, MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';

jest.setTimeout(120_000);

const RETRY_INTERVAL_MS = 500;
/** Scheduling slack on a loaded 2-core machine: connect + register handshake, timer lateness. */
const SLACK_MS = 1000;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;
let node: TestProcess;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  dir = await group.tempDir('iop-e2e-restart-');
  config = fabricConfig({
    dataDir: `${dir}/data`,
    transportListen: `127.0.0.1:${await freePort()}`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
  });
});

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
});

function logTime(edge: EdgeProcess, message: string): number | undefined {
  const record = edge.logRecords().find((entry) => entry.msg === message);
  return typeof record?.time === 'number' ? record.time : undefined;
}

async function waitRegistered(edge: EdgeProcess): Promise<number> {
  await waitUntil(
    () => logTime(edge, 'node registered') !== undefined,
    RETRY_INTERVAL_MS + 20_000,
    () => `node registered\n${edge.describe()}\n${node.describe()}`,
  );
  const listening = logTime(edge, 'node transport listening') ?? 0;
  return (logTime(edge, 'node registered') ?? 0) - listening;
}

async function chat(edge: EdgeProcess, model: string): Promise<{ status: number; content: string }> {
  const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'again' }] }),
  });
  const body = (await response.json()) as { choices?: { message?: { content?: string } }[] };
  return { status: response.status, content: body.choices?.[0]?.message?.content ?? '' };
}

describe('edge restart', () => {
  it('the node re-registers within one retry interval after a clean stop and after a crash, and serves again', async () => {
    const first = await startEdgeProcess(group, dir, config, 'edge-1');
    node = await startFabricNode(group, first, { retryIntervalMs: RETRY_INTERVAL_MS, maxRetries: 1000 });
    await waitRegistered(first);
    await waitUntil(async () => (await chat(first, MODEL_QWEN)).status === 200, 10_000, 'first edge serves');

    const delays: number[] = [];
    // 1. Clean shutdown: the node is told `shutdown` and starts retrying.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 3 * RETRY_INTERVAL_MS));
    const second = await startEdgeProcess(group, dir, config, 'edge-2');
    delays.push(await waitRegistered(second));
    for (const model of [MODEL_LLAMA, MODEL_QWEN]) {
      expect(await chat(second, model)).toEqual({
        status: 200,
        content: 'again again again again again again again again',
      });
    }

    // 2. Crash mid-stream: no goodbye; the node notices the dead socket, aborts the run it was serving (its
    // upstream request is closed: nothing keeps generating for a consumer that is gone) and retries on its own.
    vllm.setBehavior({ tokenCount: 500, tokenDelayMs: 20 });
    const streamed = vllm.requests.length;
    const orphan = fetch(`${second.addresses.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: 'orphan' }],
        stream: true,
      }),
    })
      .then((response) => response.text())
      .catch((error: unknown) => String(error));
    const upstream = () =>
      vllm.requests.slice(streamed).find((request) => request.path === '/v1/chat/completions');
    await waitUntil(() => upstream()?.outcome === 'pending', 10_000, 'long stream running upstream');
    const crashedAt = Date.now();
    expect((await second.stop('SIGKILL')).signal).toBe('SIGKILL');
    await orphan;
    await waitUntil(
      () => upstream()?.outcome === 'client-closed',
      10_000,
      'orphaned upstream request closed',
    );
    const orphanClosedMs = (upstream()?.closedAt ?? 0) - crashedAt;
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 3 * RETRY_INTERVAL_MS));
    const third = await startEdgeProcess(group, dir, config, 'edge-3');
    delays.push(await waitRegistered(third));
    for (const model of [MODEL_LLAMA, MODEL_QWEN]) {
      expect(await chat(third, model)).toEqual({
        status: 200,
        content: 'again again again again again again again again',
      });
    }

    process.stdout.write(
      `[e2e restart] re-registration after edge start: ${delays.join(' ms, ')} ms (retry interval ${RETRY_INTERVAL_MS} ms); ` +
        `orphaned upstream stream closed ${orphanClosedMs} ms after the edge crash\n`,
    );
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(RETRY_INTERVAL_MS + SLACK_MS);
    expect(vllm.activeRequests).toBe(0);
    // The same node process did it all by itself, and registered exactly once per edge.
    expect(node.running).toBe(true);
    expect(third.logRecords().filter((entry) => entry.msg === 'node registered')).toHaveLength(1);
    expect(node.stderr()).toContain('reconnecting to edge');
    await third.stop('SIGTERM');
  });
});
