// Test support shared by the surfaces on the OpenAI listener (OpenAI, Anthropic): the listener's test config, a
// fake service over a real provider pool on two fake nodes, a request listener served on 127.0.0.1 at a port
// chosen at run time, polling, and a raw POST for what the SDKs hide.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { createProviderPool, type ProviderPool } from '../../pool/provider-pool.js';
import { FakeNodes } from '../../pool/test-support/pool-fixture.js';
import { FakeEdgeService, textRun, type Scripter } from '../../test-support/fake-edge-service.js';

export interface HarnessOptions {
  /** Lines placed inside the `openai:` block (two-space indented keys). */
  openai?: string;
  /** openai.enabled (default true). */
  enabled?: boolean;
  /** openai.strict_output (default true here). */
  strictOutput?: boolean;
  /** Provider overrides: capacity / max_queue / queue_timeout_ms for both providers. */
  capacityA?: number;
  capacityB?: number;
  maxQueue?: number;
  queueTimeoutMs?: number;
  scripter?: Scripter;
}

export function harnessConfig(options: HarnessOptions = {}): EdgeConfig {
  const queue = `max_queue: ${options.maxQueue ?? 2}, queue_timeout_ms: ${options.queueTimeoutMs ?? 300}`;
  const yaml = `
edge: { id: test-edge, listen: '127.0.0.1:19990', data_dir: /tmp/iop-openai-test }
openai:
  enabled: ${options.enabled ?? true}
  listen: '127.0.0.1:0'
  session_id: 'openai'
  timeout_sec: 30
  strict_output: ${options.strictOutput ?? true}
  model_routes:
    - { model: 'codex', adapter: 'cli', target: 'codex', node: 'node-1', workspace_required: true }
    - { model: 'llama3', adapter: 'ollama', target: 'llama3:8b' }
${options.openai ?? ''}
models:
  - id: 'pooled'
    providers: { prov-a: 'served-a', prov-b: 'served-b' }
    default_max_tokens: 512
    min_max_tokens: 64
    default_thinking_token_budget: 256
nodes:
  - id: node-1
    adapters:
      openai_compat: { enabled: true, provider: vllm, base_url: 'http://127.0.0.1:9' }
      cli: { profiles: { codex: { command: 'codex' } } }
      ollama: { base_url: 'http://127.0.0.1:9' }
    providers:
      - { id: prov-a, type: vllm, category: api, adapter: openai_compat, models: ['served-a'], capacity: ${options.capacityA ?? 2}, ${queue} }
  - id: node-2
    adapters:
      openai_compat: { enabled: true, provider: vllm, base_url: 'http://127.0.0.1:9' }
    providers:
      - { id: prov-b, type: vllm, category: api, adapter: openai_compat, models: ['served-b'], capacity: ${options.capacityB ?? 1}, priority: 1, ${queue} }
`;
  const result = parseConfigText(yaml, 'openai-test.yaml');
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  return result.config;
}

/** What a harness serves over: node-1 and node-2 connected, a real pool on them, a FakeEdgeService running the script. */
export interface HarnessFabric {
  config: EdgeConfig;
  nodes: FakeNodes;
  pool: ProviderPool;
  service: FakeEdgeService;
}

export function harnessFabric(options: HarnessOptions = {}): HarnessFabric {
  const config = harnessConfig(options);
  const nodes = new FakeNodes();
  nodes.connect('node-1');
  nodes.connect('node-2');
  const pool = createProviderPool({ config, nodes, pollIntervalMs: 50 });
  const service = new FakeEdgeService(
    options.scripter ?? (() => ({ parts: textRun(['Hello', ' there']) })),
    nodes.list,
    pool,
  );
  return { config, nodes, pool, service };
}

export interface ServedListener {
  server: Server;
  url: string;
  /** Runs `onClose` (the app's and the pool's own close), then closes every open connection and the server. */
  close: () => Promise<void>;
}

/** Serves `listener` on 127.0.0.1 at a port chosen now. */
export async function serveListener(listener: RequestListener, onClose: () => void): Promise<ServedListener> {
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        onClose();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls until `check` passes or the time is up (then throws the last failure). */
export async function eventually(check: () => void | Promise<void>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** Raw POST for status/header checks the SDK hides. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json(): Record<string, unknown>;
}

export async function post(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: () => JSON.parse(text) as Record<string, unknown>,
  };
}
