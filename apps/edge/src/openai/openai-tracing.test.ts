// End-to-end tracing on the edge side: a request with a `traceparent` → spans of admission and of the run in that
// trace (in-memory exporter) → the RunRequest on the wire carries a traceparent of the same trace whose parent is
// the edge's run span (the node continues from there: apps/node/src/runner/run-executor-tracing.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { createTracing, InMemorySpanExporter, traceIdOf } from '@iop/tracing';
import type { RunRequest } from '@iop/wire';
import { createEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import { ANSWERING_NODE_CONFIG, startAnsweringNode } from '../node/test-support/answering-node.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import { createEdgeService } from '../service/edge-service.js';
import { closeOpenAIApp, createOpenAIApp } from './openai-app.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CALLER = `00-${TRACE_ID}-b7ad6b7169203331-01`;

const config = ANSWERING_NODE_CONFIG;

describe('tracing through the edge', () => {
  let server: Server;
  let pool: ProviderPool;
  let app: ReturnType<typeof createOpenAIApp>;
  let exporter: InMemorySpanExporter;
  let sent: RunRequest[];
  let url: string;

  beforeEach(async () => {
    exporter = new InMemorySpanExporter();
    const node = startAnsweringNode();
    const registry = node.registry;
    sent = node.requests;
    const events = createEventBus({ replaySize: 0, queueSize: 100 });
    pool = createProviderPool({ config, nodes: registry, events, pollIntervalMs: 20 });
    const service = createEdgeService({
      registry,
      pool,
      events,
      logger: silentLogger,
      tracing: createTracing({ enabled: true, serviceName: 'iop-edge', exporter }),
    });
    app = createOpenAIApp({ config, service, logger: silentLogger });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterEach(async () => {
    closeOpenAIApp(app);
    pool.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("continues the caller's trace on the edge and hands the node a child of the edge's run span", async () => {
    const client = new OpenAI({
      baseURL: url,
      apiKey: 'k',
      maxRetries: 0,
      defaultHeaders: { traceparent: CALLER },
    });
    await client.chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'hi' }] });
    const spans = exporter.getFinishedSpans();
    const admission = spans.find((span) => span.name === 'iop.edge.admission');
    const run = spans.find((span) => span.name === 'iop.edge.run');
    expect(admission?.spanContext().traceId).toBe(TRACE_ID);
    expect(run?.spanContext().traceId).toBe(TRACE_ID);
    expect(run?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(run?.attributes['iop.node']).toBe('node-1');
    const wire = sent[0]?.traceparent ?? '';
    expect(traceIdOf(wire)).toBe(TRACE_ID);
    expect(wire.split('-')[2]).toBe(run?.spanContext().spanId);
  });

  it('starts a trace at the edge when the caller sends none', async () => {
    const client = new OpenAI({ baseURL: url, apiKey: 'k', maxRetries: 0 });
    await client.chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'hi' }] });
    const run = exporter.getFinishedSpans().find((span) => span.name === 'iop.edge.run');
    expect(run?.parentSpanContext).toBeUndefined();
    expect(traceIdOf(sent[0]?.traceparent)).toBe(run?.spanContext().traceId);
  });
});
