// The node continues the edge's trace: a RunRequest with a traceparent produces node spans of that trace, and the
// HTTP backend receives a traceparent of the same trace (a child of the node's backend span). Real openai_compat
// adapter against the fake OpenAI server; spans in an in-memory exporter.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '@iop/clock';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@iop/logging';
import { startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { createTracing, InMemorySpanExporter, traceIdOf, type Tracing } from '@iop/tracing';
import { create } from '@iop/wire';
import { httpInstance } from '../adapters/http/test-support/http-adapter-fixtures.js';
import { createOpenAICompatAdapter } from '../adapters/openai-compat/openai-compat-adapter.js';
import { AdapterRegistry } from '../adapters/registry.js';
import { SqliteRunHistory } from '../history/sqlite-run-history.js';
import { RunExecutor } from './run-executor.js';
import { RecordingOutbound } from './test-support/recording-outbound.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const EDGE_SPAN = '00f067aa0ba902b7';
const EDGE_TRACEPARENT = `00-${TRACE_ID}-${EDGE_SPAN}-01`;

describe('RunExecutor tracing', () => {
  let dir: string;
  let server: FakeServer;
  let history: SqliteRunHistory;
  let registry: AdapterRegistry;
  let exporter: InMemorySpanExporter;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-node-trace-'));
    server = await startFakeOpenAI();
    history = SqliteRunHistory.open({ path: path.join(dir, 'history.db') });
    registry = new AdapterRegistry({
      factories: { openai_compat: createOpenAICompatAdapter },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    registry.apply([
      httpInstance('openai_compat', 'vllm', {
        provider: 'vllm',
        baseUrl: server.url,
        requestTimeoutMs: 2000,
      }),
    ]);
    exporter = new InMemorySpanExporter();
  });

  afterEach(async () => {
    await registry.close();
    await history.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function run(tracing: Tracing | undefined, traceparent: string): Promise<void> {
    const executor = new RunExecutor({
      adapters: registry,
      outbound: new RecordingOutbound(),
      history,
      logger: silentLogger,
      clock: systemClock,
      maxConcurrency: () => 4,
      ...(tracing ? { tracing } : {}),
    });
    executor.submit(
      create.runRequest({
        runId: 'run-1',
        adapter: 'vllm',
        target: 'model-x',
        sessionId: 's',
        messages: [create.chatMessage({ role: 'user', content: 'hi' })],
        traceparent,
      }),
    );
    await executor.idle();
    await executor.shutdown();
  }

  it("makes node spans in the edge's trace and sends the backend a traceparent of the same trace", async () => {
    await run(createTracing({ enabled: true, serviceName: 'iop-node', exporter }), EDGE_TRACEPARENT);
    const spans = exporter.getFinishedSpans();
    const nodeRun = spans.find((span) => span.name === 'iop.node.run');
    const backend = spans.find((span) => span.name === 'iop.node.backend');
    expect(nodeRun?.spanContext().traceId).toBe(TRACE_ID);
    expect(nodeRun?.parentSpanContext?.spanId).toBe(EDGE_SPAN);
    expect(backend?.spanContext().traceId).toBe(TRACE_ID);
    expect(backend?.parentSpanContext?.spanId).toBe(nodeRun?.spanContext().spanId);
    expect(nodeRun?.attributes['iop.run_id']).toBe('run-1');
    const sent = server.requests.find((request) => request.path.endsWith('/chat/completions'));
    const header = String(sent?.headers['traceparent'] ?? '');
    expect(traceIdOf(header)).toBe(TRACE_ID);
    expect(header.split('-')[2]).toBe(backend?.spanContext().spanId);
  });

  it("passes the edge's traceparent through unchanged when the node does not trace", async () => {
    await run(undefined, EDGE_TRACEPARENT);
    const sent = server.requests.find((request) => request.path.endsWith('/chat/completions'));
    expect(sent?.headers['traceparent']).toBe(EDGE_TRACEPARENT);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });

  it('sends no traceparent for an untraced run', async () => {
    await run(createTracing({ enabled: false, serviceName: 'iop-node' }), '');
    const sent = server.requests.find((request) => request.path.endsWith('/chat/completions'));
    expect(sent?.headers['traceparent']).toBeUndefined();
  });
});
