// Loopback measurements of the edge spine (transport → link → run supervisor → handle) against an in-process fake
// node that answers at once. The bounds are loose (a shared 2-core machine); they catch order-of-magnitude
// regressions such as per-event copies or timers. `IOP_BENCH=1` prints the measured numbers.
import { describe, it, expect, afterEach } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create, envelope as build, toWireRunEvent, type Envelope } from '@iop/wire';
import { startEdgeRuntime, type EdgeRuntime } from '../src/edge-runtime.js';
import { silentLogger } from '../src/logging.js';
import { testEdgeConfig } from '../src/node/test-support/config-fixture.js';
import { connectFakeNode, type FakeNode } from '../src/transport/test-support/fake-node.js';

let runtime: EdgeRuntime | undefined;
let dataDir = '';

afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function report(name: string, value: string): void {
  if (process.env['IOP_BENCH'] === '1') process.stdout.write(`[bench] ${name}: ${value}\n`);
}

/** A fake node that streams `deltas` text events then completes, for every run request it gets. */
async function startSpine(deltas: number): Promise<{ runtime: EdgeRuntime; node: FakeNode }> {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-bench-'));
  runtime = await startEdgeRuntime({
    config: testEdgeConfig({ edge: { data_dir: dataDir } }),
    configPath: 'bench',
    logger: silentLogger,
    surfaces: [],
  });
  const { token } = await runtime.store.register('test-node');
  const node = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
  const answer = async (envelope: Envelope) => {
    if (envelope.msg?.$case !== 'runRequest') return;
    const runId = envelope.msg.runRequest.runId;
    let seq = 0;
    const sends: Promise<void>[] = [
      node.send(
        build.runEvent(
          toWireRunEvent(runId, ++seq, { type: 'start', sessionId: 's', adapter: 'cli', target: 't' }),
        ),
      ),
    ];
    for (let index = 0; index < deltas; index += 1) {
      sends.push(
        node.send(build.runEvent(toWireRunEvent(runId, ++seq, { type: 'text-delta', text: 'token ' }))),
      );
    }
    sends.push(
      node.send(
        build.runEvent(
          toWireRunEvent(runId, seq + 1, {
            type: 'complete',
            detail: 'stop',
            finishReason: 'stop',
            backendMs: 0,
          }),
        ),
      ),
    );
    await Promise.all(sends);
  };
  // Poll the fake node's received frames (its reader pushes every frame there).
  let handled = 0;
  const timer = setInterval(() => {
    while (handled < node.frames.length) {
      const frame = node.frames[handled++];
      if (frame) void answer(frame);
    }
  }, 1);
  const stop = runtime.stop.bind(runtime);
  runtime.stop = async (reason?: string) => {
    clearInterval(timer);
    await stop(reason);
  };
  return { runtime, node };
}

const destination = { kind: 'route', adapter: 'cli', target: 't' } as const;
const spec = {
  session: { kind: 'fixed', sessionId: 's' } as const,
  messages: [create.chatMessage({ role: 'user', content: 'go' })],
};
const options = { surface: 'console' } as const;

describe('edge spine throughput (loopback)', () => {
  it('streams 20,000 text deltas of one run to its handle in order', async () => {
    const { runtime: edge } = await startSpine(20_000);
    const started = performance.now();
    const handle = await edge.service.submitRun(destination, spec, options);
    let count = 0;
    let lastSeq = 0;
    let outOfOrder = 0;
    for await (const event of handle.events) {
      if (event.seq !== lastSeq + 1) outOfOrder += 1;
      lastSeq = event.seq;
      count += 1;
    }
    const elapsed = performance.now() - started;
    expect(count).toBe(20_002);
    expect(outOfOrder).toBe(0);
    report('events per second (one run, 20k deltas)', `${Math.round(count / (elapsed / 1000))}`);
    expect(elapsed).toBeLessThan(30_000);
    expect(edge.service.inFlightRuns).toBe(0);
  }, 45_000);

  it('completes 300 sequential short runs with a low per-run edge overhead', async () => {
    const { runtime: edge } = await startSpine(3);
    const durations: number[] = [];
    const overheads: number[] = [];
    for (let index = 0; index < 300; index += 1) {
      const started = performance.now();
      const handle = await edge.service.submitRun(destination, spec, options);
      for await (const event of handle.events) void event;
      durations.push(performance.now() - started);
      overheads.push(handle.overheadMs() ?? Number.NaN);
    }
    durations.sort((left, right) => left - right);
    const p50 = durations[Math.floor(durations.length * 0.5)] ?? 0;
    const p99 = durations[Math.floor(durations.length * 0.99)] ?? 0;
    report(
      'short run round trip p50/p99 ms (incl. fake node poll ≤1 ms)',
      `${p50.toFixed(2)} / ${p99.toFixed(2)}`,
    );
    expect(overheads.every((value) => Number.isFinite(value) && value >= 0)).toBe(true);
    expect(p50).toBeLessThan(50);
    expect(edge.service.inFlightRuns).toBe(0);
  });
});
