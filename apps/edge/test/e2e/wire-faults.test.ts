// Wire faults against a real edge process (issue 10): raw TCP clients send garbage, an oversize length prefix, a
// half frame then silence, and a half frame then hang up. Each is disconnected, the edge logs why (JSON log on its
// stderr), `iop_frame_errors_total` on /metrics counts the bad frames, and a registered node process keeps
// serving a stream that runs across the attack and requests after it.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  metricSum,
  scrapeMetrics,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';
import { classifyChatOutcome } from '../support/openai-outcome.js';

jest.setTimeout(60_000);

const REGISTER_TIMEOUT_MS = 800;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-wire-');
  edge = await startEdgeProcess(
    group,
    dir,
    fabricConfig({
      dataDir: `${dir}/data`,
      registerTimeoutMs: REGISTER_TIMEOUT_MS,
      nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
    }),
  );
  const node = await startFabricNode(group, edge);
  await waitUntil(
    () => edge.logRecords().some((entry) => entry.msg === 'node registered'),
    30_000,
    () => `node registered\n${node.describe()}`,
  );
}, 60_000);

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
});

interface RawOutcome {
  closedAfterMs: number;
  /** Bytes the edge sent back (none expected before a register request). */
  received: number;
}

/** Connects, writes `bytes`, optionally hangs up, and waits (bounded) for the edge to close the socket. */
function rawClient(
  bytes: Buffer,
  options: { hangUp?: boolean; timeoutMs?: number } = {},
): Promise<RawOutcome> {
  const [host, port] = edge.addresses.transport.split(':');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port: Number(port) });
    const started = Date.now();
    let received = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the edge kept the connection open for ${options.timeoutMs ?? 5000} ms`));
    }, options.timeoutMs ?? 5000);
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closedAfterMs: Date.now() - started, received });
    });
    socket.on('connect', () => {
      socket.write(bytes);
      if (options.hangUp) socket.end();
    });
  });
}

function lengthPrefix(length: number): Buffer {
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(length >>> 0);
  return prefix;
}

/** The edge's warn records about connections closed before registering, by reason. */
function closeReasons(): string[] {
  return edge
    .logRecords()
    .filter((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('connection closed'))
    .map((entry) => String(entry.reason));
}

describe('bad wire input', () => {
  it('disconnects each bad client with a logged reason and counts frame errors while a node keeps serving', async () => {
    const before = metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_frame_errors_total');
    // A stream that spans the whole attack.
    vllm.setBehavior({ tokenCount: 60, tokenDelayMs: 25 });
    const longStream = fetch(`${edge.addresses.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: 'steady' }],
        stream: true,
      }),
    })
      .then((response) => classifyChatOutcome(response, true))
      // Settled either way so an early failure below never leaves an unhandled rejection behind.
      .catch((error: unknown) => ({ kind: 'malformed' as const, detail: String(error) }));
    await waitUntil(() => vllm.activeRequests === 1, 10_000, 'long stream started upstream');

    const garbagePayload = Buffer.alloc(32, 0xff);
    const garbage = await rawClient(Buffer.concat([lengthPrefix(garbagePayload.length), garbagePayload]));
    const oversize = await rawClient(Buffer.concat([lengthPrefix(0xfffffff0), Buffer.from('xxxx')]));
    const httpGarbage = await rawClient(Buffer.from('GET / HTTP/1.1\r\nHost: edge\r\n\r\n'));
    const halfThenSilence = await rawClient(Buffer.concat([lengthPrefix(200), Buffer.alloc(20, 1)]), {
      timeoutMs: REGISTER_TIMEOUT_MS + 5000,
    });
    const halfThenHangUp = await rawClient(Buffer.concat([lengthPrefix(200), Buffer.alloc(20, 1)]), {
      hangUp: true,
    });
    process.stdout.write(
      `[e2e wire] closed after (ms): garbage ${garbage.closedAfterMs}, oversize ${oversize.closedAfterMs}, ` +
        `http ${httpGarbage.closedAfterMs}, half+silence ${halfThenSilence.closedAfterMs}, half+hang-up ${halfThenHangUp.closedAfterMs}\n`,
    );
    // Silence is cut at the register timeout, not before and not much after.
    expect(halfThenSilence.closedAfterMs).toBeGreaterThanOrEqual(REGISTER_TIMEOUT_MS - 50);
    expect(halfThenSilence.closedAfterMs).toBeLessThan(REGISTER_TIMEOUT_MS + 3000);

    await waitUntil(
      () => closeReasons().length >= 5,
      5000,
      () => `5 close logs, got ${closeReasons().join(', ')}`,
    );
    expect(closeReasons().sort()).toEqual(
      ['frame_too_large', 'frame_too_large', 'malformed_frame', 'register-timeout', 'truncated_frame'].sort(),
    );
    const after = await scrapeMetrics(edge.addresses.metrics);
    expect(metricSum(after, 'iop_frame_errors_total') - before).toBeGreaterThanOrEqual(4);
    expect(metricSum(after, 'iop_frame_errors_total', { code: 'frame_too_large' })).toBeGreaterThanOrEqual(2);
    expect(metricSum(after, 'iop_frame_errors_total', { code: 'malformed_frame' })).toBeGreaterThanOrEqual(1);

    // The node was never disturbed: the long stream completes and new requests are served.
    expect(await longStream).toEqual({ kind: 'ok' });
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
    const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_QWEN, messages: [{ role: 'user', content: 'after' }] }),
    });
    expect(await classifyChatOutcome(response, false)).toEqual({ kind: 'ok' });
    expect(edge.logRecords().filter((entry) => entry.msg === 'node disconnected')).toEqual([]);
  });
});
