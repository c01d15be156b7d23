// Cross-process end to end (issue 21): one trace through a real edge process, a real node process and the fake
// vLLM backend. The client sends a `traceparent`; the edge (tracing.enabled) and the node (IOP_OTLP_ENDPOINT)
// export their spans over OTLP/HTTP to a fake collector in this process, and the backend receives a traceparent of
// the same trace.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import { ProcessGroup, startEdgeProcess, waitUntil, type EdgeProcess } from '../support/e2e-processes.js';
import { MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  waitForProvidersReady,
  stopFabric,
} from '../support/fabric-setup.js';

jest.setTimeout(90_000);

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

interface ExportedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
}

/** A minimal OTLP/HTTP JSON traces receiver: remembers every span it is sent. */
class FakeCollector {
  readonly spans: ExportedSpan[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      void readBody(request).then((body) => {
        this.collect(body);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1/traces`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      if (this.server) this.server.close(() => resolve());
      else resolve();
    });
  }

  private collect(body: string): void {
    interface Payload {
      resourceSpans?: {
        resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
        scopeSpans?: { spans?: { name: string; traceId: string; spanId: string; parentSpanId?: string }[] }[];
      }[];
    }
    const payload = JSON.parse(body) as Payload;
    for (const resource of payload.resourceSpans ?? []) {
      const service =
        resource.resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value
          .stringValue ?? '';
      for (const scope of resource.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            service,
            name: span.name,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
          });
        }
      }
    }
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

const group = new ProcessGroup();
const collector = new FakeCollector();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let admin: AdminClient;

beforeAll(async () => {
  await collector.start();
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-tracing-');
  edge = await startEdgeProcess(group, dir, {
    ...fabricConfig({
      dataDir: `${dir}/data`,
      nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
    }),
    tracing: { enabled: true, otlp_endpoint: collector.url, sample_ratio: 1 },
  });
  await startFabricNode(group, edge, { env: { IOP_OTLP_ENDPOINT: collector.url } });
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => edge.describe());
}, 120_000);

afterAll(async () => {
  await stopFabric(group, admin, ollama, vllm);
  await collector.close();
});

describe('one trace from the client through edge, node and backend', () => {
  it('exports edge and node spans with the caller trace id and hands the backend the same trace', async () => {
    const client = new OpenAI({
      baseURL: `${edge.addresses.openai}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { traceparent: CALLER },
    });
    await client.chat.completions.create({ model: MODEL_QWEN, messages: [{ role: 'user', content: 'hi' }] });
    const sent = vllm.requests.find((request) => request.path.endsWith('/chat/completions'));
    const header = String(sent?.headers['traceparent'] ?? '');
    expect(header.split('-')[1]).toBe(TRACE_ID);
    // The batch processors export every 2 s.
    await waitUntil(
      () =>
        ['iop.edge.run', 'iop.node.run', 'iop.node.backend'].every((name) =>
          collector.spans.some((span) => span.name === name),
        ),
      20_000,
      () => `spans: ${JSON.stringify(collector.spans)}`,
    );
    const byName = (name: string) => collector.spans.find((span) => span.name === name);
    const edgeRun = byName('iop.edge.run');
    const nodeRun = byName('iop.node.run');
    const backend = byName('iop.node.backend');
    expect(edgeRun).toMatchObject({
      service: 'iop-edge',
      traceId: TRACE_ID,
      parentSpanId: '00f067aa0ba902b7',
    });
    expect(byName('iop.edge.admission')).toMatchObject({ service: 'iop-edge', traceId: TRACE_ID });
    expect(nodeRun).toMatchObject({ service: 'iop-node', traceId: TRACE_ID, parentSpanId: edgeRun?.spanId });
    expect(backend).toMatchObject({ service: 'iop-node', traceId: TRACE_ID, parentSpanId: nodeRun?.spanId });
    expect(header.split('-')[2]).toBe(backend?.spanId);
  });
});
