// Test support for the live config-refresh tests: a real edge runtime (node transport, OpenAI surface, config
// refresh, admin gRPC API) on loopback ports chosen at run time, fed a config written as JSON (valid YAML), and
// scripted fake nodes that register over the real transport, acknowledge (or refuse, or ignore) config refresh
// requests and run whatever the edge sends until the test completes each run.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { formatIssue, isLoopbackListen, parseConfigText, type EdgeConfig } from '@iop/config';
import {
  envelope as build,
  toWireRunEvent,
  type NodeConfigPayload,
  type RunEventPart,
  type RunRequest,
} from '@iop/wire';
import { createAdminClient, type AdminClient, type AdminClientOptions } from '../src/admin/admin-client.js';
import { systemClock } from '../src/clock.js';
import { adminTlsFiles, readAdminClientTls } from '../src/admin/admin-tls.js';
import { ensureEdgeIdentity } from '../src/tls/edge-identity.js';
import { createAdminSurface } from '../src/admin/admin-server.js';
import { startEdgeRuntime, type EdgeRuntime } from '../src/edge-runtime.js';
import { silentLogger } from '../src/logging.js';
import { createOpenAISurface } from '../src/openai/openai-surface.js';
import type { ProviderPool } from '../src/pool/provider-pool.js';
import type { ConfigRefresher } from '../src/refresh/config-refresher.js';
import { fromRefreshConfigResponse, type RefreshResult } from '../src/refresh/refresh-result.js';
import type { SurfaceFactory } from '../src/surface.js';
import { connectFakeNode, waitUntil, type FakeNode } from '../src/transport/test-support/fake-node.js';

export { waitUntil };

export const NODE_TOKEN = 'refresh-test-token';

export interface ProviderSpec {
  id: string;
  served: string;
  capacity?: number;
  max_queue?: number;
  queue_timeout_ms?: number;
  enabled?: boolean;
  priority?: number;
}

export interface ModelSpec {
  id: string;
  /** provider id → served model name */
  providers: Record<string, string>;
  default_max_tokens?: number | null;
  min_max_tokens?: number | null;
}

export interface NodeSpec {
  id: string;
  max_concurrency?: number;
  providers: ProviderSpec[];
}

export interface ConfigSpec {
  dataDir: string;
  /** refresh.listen (default 127.0.0.1:0) and refresh.admin_token (default none). */
  refreshListen?: string;
  adminToken?: string;
  /** base_url of every node's openai_compat adapter instance `vllm` (default: a closed port). */
  baseUrl?: string;
  refreshEnabled?: boolean;
  nodes: NodeSpec[];
  models: ModelSpec[];
  heartbeatIntervalMs?: number;
  /** edge.tls (enabled) — required for an admin token beyond loopback, which then speaks TLS. */
  tls?: { certFile: string; keyFile: string };
}

/** The config document (plain data; its JSON text is valid edge.yaml). */
export function configDocument(spec: ConfigSpec): Record<string, unknown> {
  return {
    edge: {
      id: 'edge-refresh-test',
      listen: '127.0.0.1:0',
      data_dir: spec.dataDir,
      register_timeout_ms: 2000,
      heartbeat_interval_ms: spec.heartbeatIntervalMs ?? 1000,
      heartbeat_timeout_ms: 10_000,
      ...(spec.tls
        ? { tls: { enabled: true, cert_file: spec.tls.certFile, key_file: spec.tls.keyFile } }
        : {}),
    },
    logging: { level: 'silent' },
    metrics: { enabled: false },
    refresh: {
      enabled: spec.refreshEnabled ?? true,
      listen: spec.refreshListen ?? '127.0.0.1:0',
      admin_token: spec.adminToken ?? '',
    },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: { enabled: true, listen: '127.0.0.1:0' },
    a2a: { enabled: false },
    models: spec.models.map((model) => ({ ...model })),
    nodes: spec.nodes.map((node) => ({
      id: node.id,
      token: NODE_TOKEN,
      runtime: { max_concurrency: node.max_concurrency ?? 4 },
      adapters: {
        instances: [
          { name: 'vllm', type: 'openai_compat', base_url: spec.baseUrl ?? 'http://127.0.0.1:9/v1' },
        ],
      },
      providers: node.providers.map(({ served, ...provider }) => ({
        type: 'vllm',
        category: 'api',
        adapter: 'vllm',
        models: [served],
        capacity: 1,
        max_queue: 4,
        queue_timeout_ms: 10_000,
        ...provider,
      })),
    })),
  };
}

export function configText(spec: ConfigSpec): string {
  return JSON.stringify(configDocument(spec), null, 2);
}

export interface RunSeen {
  request: RunRequest;
  done: boolean;
}

export type RefreshAnswer = 'ack' | 'refuse' | 'ignore';

/** A fake node speaking the real protocol; runs stay open until the test ends them. */
export class ScriptedNode {
  readonly runs: RunSeen[] = [];
  readonly refreshes: NodeConfigPayload[] = [];
  answer: RefreshAnswer = 'ack';
  /** Delay before acknowledging a refresh request. */
  ackDelayMs = 0;
  private scanned = 0;
  private readonly timer: NodeJS.Timeout;
  private seq = new Map<string, number>();

  constructor(
    readonly id: string,
    readonly fake: FakeNode,
  ) {
    this.timer = setInterval(() => this.scan(), 2);
  }

  get payload(): NodeConfigPayload | undefined {
    return this.fake.response.config;
  }

  openRuns(): RunSeen[] {
    return this.runs.filter((run) => !run.done);
  }

  async waitForRuns(count: number, timeoutMs = 3000): Promise<void> {
    await waitUntil(() => this.runs.length >= count, timeoutMs, `${count} runs on ${this.id}`);
  }

  /** Sends start, the text deltas (optionally spaced) and complete for a run. */
  async finish(run: RunSeen, text = 'ok', options: { deltas?: number; gapMs?: number } = {}): Promise<void> {
    const runId = run.request.runId;
    run.done = true;
    await this.send(runId, {
      type: 'start',
      sessionId: run.request.sessionId,
      adapter: run.request.adapter,
      target: run.request.target,
    });
    const deltas = options.deltas ?? 1;
    for (let index = 0; index < deltas; index += 1) {
      await this.send(runId, { type: 'text-delta', text });
      if (options.gapMs) await new Promise((resolve) => setTimeout(resolve, options.gapMs));
    }
    await this.send(runId, { type: 'complete', detail: 'done', finishReason: 'stop', backendMs: 1 });
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.fake.close();
  }

  private async send(runId: string, part: RunEventPart): Promise<void> {
    const seq = (this.seq.get(runId) ?? 0) + 1;
    this.seq.set(runId, seq);
    await this.fake.send(build.runEvent(toWireRunEvent(runId, seq, part)));
  }

  private scan(): void {
    const frames = this.fake.frames;
    for (; this.scanned < frames.length; this.scanned += 1) {
      const frame = frames[this.scanned];
      const msg = frame?.msg;
      if (!frame || !msg) continue;
      if (msg.$case === 'runRequest') {
        this.runs.push({ request: msg.runRequest, done: false });
      } else if (msg.$case === 'cancelRequest') {
        const run = this.runs.find((entry) => entry.request.runId === msg.cancelRequest.runId);
        if (run && !run.done) {
          run.done = true;
          void this.send(run.request.runId, { type: 'cancelled', reason: 'cancelled' }).catch(
            () => undefined,
          );
        }
      } else if (msg.$case === 'nodeConfigRefreshRequest') {
        const config = msg.nodeConfigRefreshRequest.config;
        if (config) this.refreshes.push(config);
        const answer = this.answer;
        if (answer === 'ignore') continue;
        const reply = build.nodeConfigRefreshResult(frame.requestId, {
          revision: config?.revision ?? '',
          ok: answer === 'ack',
          error: answer === 'ack' ? '' : 'adapter rebuild failed',
        });
        setTimeout(() => void this.fake.send(reply).catch(() => undefined), this.ackDelayMs);
      }
    }
  }
}

export interface RefreshHarness {
  dir: string;
  configPath: string;
  runtime: EdgeRuntime;
  openaiUrl: string;
  adminAddress: string;
  admin: AdminClient;
  /** edge.tls of the harness config (set for an admin token beyond loopback). */
  tls: ConfigSpec['tls'];
  /** What an admin client needs to reach a TLS admin API (undefined on loopback). */
  adminTls: AdminClientOptions['tls'];
  /** The runtime's provider pool. */
  pool: ProviderPool;
  /** The runtime's config refresher (throws when the harness config has refresh.enabled false). */
  readonly refresher: ConfigRefresher;
  nodes: Map<string, ScriptedNode>;
  node(id: string): ScriptedNode;
  connect(id: string): Promise<ScriptedNode>;
  /** RefreshConfig through the admin API with the spec's JSON text. */
  refresh(mode: string, spec: ConfigSpec | string): Promise<RefreshResult>;
  /** A non-streaming chat completion; resolves when the node finished the run. */
  chat(model: string, body?: Record<string, unknown>): Promise<Response>;
  /** A streaming chat completion; resolves with the concatenated content when the stream ends. */
  streamChat(model: string): Promise<{ status: number; provider: string | null; text: string }>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  connect?: string[];
  nodeTimeoutMs?: number;
  waitMs?: number;
  /** refresh.enabled of the config (default true). */
  refreshEnabled?: boolean;
  refreshListen?: string;
  adminToken?: string;
  /** Token the harness's admin client sends (default: adminToken). */
  clientToken?: string;
}

export async function startRefreshHarness(
  build: (dataDir: string) => ConfigSpec,
  options: HarnessOptions = {},
): Promise<RefreshHarness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'iop-refresh-'));
  const spec: ConfigSpec = {
    ...build(path.join(dir, 'data')),
    refreshEnabled: options.refreshEnabled,
    refreshListen: options.refreshListen,
    adminToken: options.adminToken,
  };
  if (options.adminToken && options.refreshListen && !isLoopbackListen(options.refreshListen)) {
    // Beyond loopback the admin API needs the edge's TLS identity (the token must not travel in clear).
    const identity = await ensureEdgeIdentity({
      dir: path.join(dir, 'data'),
      commonName: 'edge',
      hosts: ['localhost'],
    });
    spec.tls = { certFile: identity.certFile, keyFile: identity.keyFile };
  }
  const configPath = path.join(dir, 'edge.yaml');
  const text = configText(spec);
  await writeFile(configPath, text);
  const loaded = parseConfigText(text, configPath, { baseDir: dir });
  if (!loaded.ok) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`harness config invalid:\n${loaded.issues.map(formatIssue).join('\n')}`);
  }
  const config: EdgeConfig = loaded.config;
  const surfaces: SurfaceFactory[] = [
    (core) => createOpenAISurface(core),
    createAdminSurface({ closeGraceMs: 200 }),
  ];
  let runtime: EdgeRuntime;
  try {
    // The runtime creates the refresher (refresh.enabled) and hands it to the admin surface.
    runtime = await startEdgeRuntime({
      config,
      configPath,
      logger: silentLogger,
      surfaces,
      refresh: { nodeTimeoutMs: options.nodeTimeoutMs ?? 2000, waitMs: options.waitMs },
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const openaiUrl = runtime.surfaces.find((surface) => surface.name === 'openai')?.address ?? '';
  const bound = runtime.surfaces.find((surface) => surface.name === 'admin')?.address ?? '';
  // A wildcard listener is dialled on loopback.
  const adminAddress = bound.replace(/^0\.0\.0\.0:/, '127.0.0.1:');
  const adminTls = await readAdminClientTls(adminTlsFiles(config));
  const admin = createAdminClient(
    {
      address: adminAddress,
      token: options.clientToken ?? options.adminToken,
      timeoutMs: 30_000,
      ...(adminTls ? { tls: adminTls } : {}),
    },
    systemClock,
  );
  const nodes = new Map<string, ScriptedNode>();
  const harness: RefreshHarness = {
    dir,
    configPath,
    runtime,
    openaiUrl,
    adminAddress,
    admin,
    tls: spec.tls,
    adminTls,
    pool: runtime.pool,
    get refresher() {
      if (!runtime.refresher) throw new Error('refresh.enabled is false: the runtime has no refresher');
      return runtime.refresher;
    },
    nodes,
    node(id) {
      const node = nodes.get(id);
      if (!node) throw new Error(`node ${id} is not connected`);
      return node;
    },
    async connect(id) {
      const fake = await connectFakeNode(runtime.transportAddress, { nodeId: id, token: NODE_TOKEN });
      const node = new ScriptedNode(id, fake);
      nodes.set(id, node);
      await waitUntil(() => runtime.registry.get(id) !== undefined, 3000, `${id} registered`);
      return node;
    },
    async refresh(mode, candidate) {
      const configYaml = typeof candidate === 'string' ? candidate : configText(candidate);
      return fromRefreshConfigResponse(await admin.refreshConfig({ mode, configYaml, configPath }));
    },
    chat(model, body = {}) {
      return fetch(`${openaiUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...body }),
      });
    },
    async streamChat(model) {
      const response = await harness.chat(model, { stream: true });
      const raw = await response.text();
      let text = '';
      for (const line of raw.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const chunk = JSON.parse(line.slice('data: '.length)) as {
          choices?: { delta?: { content?: string } }[];
        };
        text += chunk.choices?.[0]?.delta?.content ?? '';
      }
      return { status: response.status, provider: response.headers.get('x-iop-provider'), text };
    },
    async close() {
      admin.close();
      for (const node of nodes.values()) await node.close().catch(() => undefined);
      await runtime.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  for (const id of options.connect ?? spec.nodes.map((node) => node.id)) await harness.connect(id);
  return harness;
}

/** Every provider of the pool is idle: nothing in flight, nothing queued. */
export function poolIdle(pool: ProviderPool): boolean {
  const totals = pool.totals();
  return (
    totals.inFlight === 0 &&
    totals.queued === 0 &&
    pool.snapshot().every((provider) => provider.inFlight === 0 && provider.queued === 0)
  );
}
