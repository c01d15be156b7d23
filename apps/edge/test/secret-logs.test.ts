// No secret reaches a log line. A full run at debug level — an in-process edge (OpenAI surface with an API key,
// A2A with a bearer token, metrics) and a real `iop-node run` process whose openai_compat provider sends an
// Authorization header and an API-key header to the fake vLLM server — with good and bad credentials on every
// door: the captured JSON logs of both processes are then searched for every secret (and for the request
// header values). Needs the built node (`make compile`).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { formatIssue, parseConfigText } from '@iop/config';
import { startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { createA2ASurface } from '../src/a2a/a2a-surface.js';
import { startEdgeRuntime, type EdgeRuntime } from '../src/edge-runtime.js';
import { createLogger } from '../src/logging.js';
import { createMetricsSurface } from '../src/metrics/metrics-surface.js';
import { createOpenAISurface } from '../src/openai/openai-surface.js';
import { connectFakeNode } from '../src/transport/test-support/fake-node.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const nodeMain = path.join(repoRoot, 'apps/node/dist/main.js');
const SERVED = 'meta-llama/Llama-3.1-8B-Instruct';

const SECRETS = {
  apiKey: 'sk-iop-secret-api-key-4f1c9a',
  wrongApiKey: 'sk-iop-wrong-api-key-77d0e2',
  nodeToken: 'iop_secret_node_token_93b8c1d2',
  wrongNodeToken: 'iop_wrong_node_token_51aa0f',
  a2aToken: 'a2a-secret-bearer-c3e9f7',
  backendKey: 'backend-secret-key-0a9b8c',
  backendHeader: 'x-header-secret-value-d4e5f6',
};

let backend: FakeServer;
let runtime: EdgeRuntime;
let node: ChildProcess;
let nodeExited: Promise<void>;
let dataDir: string;
let nodeDir: string;
let edgeLog = '';
let nodeLog = '';

function edgeYaml(backendUrl: string): string {
  return `
edge: { id: secret-edge, listen: "127.0.0.1:0", data_dir: "${dataDir}", heartbeat_interval_ms: 500 }
logging: { level: debug, format: json }
metrics: { enabled: true, listen: "127.0.0.1:0" }
refresh: { enabled: false }
openai: { enabled: true, listen: "127.0.0.1:0", api_keys: ["${SECRETS.apiKey}"] }
a2a:
  enabled: true
  listen: "127.0.0.1:0"
  node: secret-node
  adapter: vllm
  target: "${SERVED}"
  bearer_token: "${SECRETS.a2aToken}"
models:
  - { id: secret-model, providers: { vllm-provider: "${SERVED}" } }
nodes:
  - id: secret-node
    token: "${SECRETS.nodeToken}"
    runtime: { max_concurrency: 4, health_probe_interval_ms: 200 }
    adapters:
      instances:
        - name: vllm
          type: openai_compat
          provider: vllm
          base_url: "${backendUrl}/v1"
          headers: { Authorization: "Bearer ${SECRETS.backendKey}", X-Api-Key: "${SECRETS.backendHeader}" }
    providers:
      - { id: vllm-provider, type: vllm, category: api, adapter: vllm, models: ["${SERVED}"], capacity: 2 }
`;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; node log:\n${nodeLog}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function surfaceUrl(name: string): string {
  const address = runtime.surfaces.find((surface) => surface.name === name)?.address ?? '';
  return address.startsWith('http') ? address : `http://${address}`;
}

beforeAll(async () => {
  if (!existsSync(nodeMain)) throw new Error(`${nodeMain} is missing: run 'make compile' first`);
  backend = await startFakeOpenAI();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-secret-edge-'));
  nodeDir = await mkdtemp(path.join(os.tmpdir(), 'iop-secret-node-'));
  const parsed = parseConfigText(edgeYaml(backend.url), 'secret-logs');
  if (!parsed.ok) throw new Error(parsed.issues.map(formatIssue).join('\n'));
  const capture = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      edgeLog += chunk.toString();
      callback();
    },
  });
  runtime = await startEdgeRuntime({
    config: parsed.config,
    configPath: 'secret-logs',
    logger: createLogger({ level: 'debug', format: 'json', destination: capture }),
    surfaces: [createMetricsSurface(), (context) => createOpenAISurface(context), createA2ASurface()],
  });
  node = spawn(
    process.execPath,
    [
      nodeMain,
      'run',
      '--edge',
      runtime.transportAddress,
      '--node-id',
      'secret-node',
      '--data-dir',
      nodeDir,
      '--log-level',
      'debug',
      '--log-format',
      'json',
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, IOP_NODE_TOKEN: SECRETS.nodeToken },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  node.stdout?.on('data', (chunk: Buffer) => (nodeLog += chunk.toString()));
  node.stderr?.on('data', (chunk: Buffer) => (nodeLog += chunk.toString()));
  nodeExited = new Promise((resolve) => node.once('exit', () => resolve()));
}, 30_000);

afterAll(async () => {
  if (node && node.exitCode === null && node.signalCode === null) {
    node.kill('SIGKILL');
    await nodeExited;
  }
  await runtime?.stop();
  await backend?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  if (nodeDir) await rm(nodeDir, { recursive: true, force: true });
});

describe('secrets in logs', () => {
  it('logs a full run at debug level without any token, key or credential header value', async () => {
    const openaiUrl = `${surfaceUrl('openai')}/v1`;
    const client = new OpenAI({ baseURL: openaiUrl, apiKey: SECRETS.apiKey, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hello there' }];
    await waitFor(
      async () => {
        try {
          await client.chat.completions.create({ model: 'secret-model', messages });
          return true;
        } catch {
          return false;
        }
      },
      20_000,
      'the node to serve secret-model',
    );
    const streamed = await client.chat.completions
      .stream({ model: 'secret-model', messages })
      .finalChatCompletion();
    expect(streamed.choices[0]?.message.content).toContain('hello');
    // Bad credentials on every door.
    const wrong = new OpenAI({ baseURL: openaiUrl, apiKey: SECRETS.wrongApiKey, maxRetries: 0 });
    await expect(wrong.chat.completions.create({ model: 'secret-model', messages })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const a2a = (token: string) =>
      fetch(`${surfaceUrl('a2a')}/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: 'm1',
              role: 'user',
              parts: [{ kind: 'text', text: 'hi' }],
            },
          },
        }),
      });
    expect((await a2a(SECRETS.a2aToken)).status).toBe(200);
    expect((await a2a(SECRETS.wrongApiKey)).status).toBe(401);
    await expect(
      connectFakeNode(runtime.transportAddress, { nodeId: 'secret-node', token: SECRETS.wrongNodeToken }),
    ).resolves.toMatchObject({ response: { accepted: false } });
    // The backend really received the credential headers (so they were in the node's hands).
    const headers = backend.requests.find((request) => request.path.includes('chat'))?.headers ?? {};
    expect(headers['authorization']).toBe(`Bearer ${SECRETS.backendKey}`);
    expect(headers['x-api-key']).toBe(SECRETS.backendHeader);

    node.kill('SIGTERM');
    await nodeExited;
    await runtime.stop();

    // The logs are real and detailed: registration, runs with their ids, debug lines from both sides.
    expect(edgeLog).toContain('"nodeId":"secret-node"');
    expect(edgeLog).toMatch(/"level":20/);
    expect(edgeLog).toMatch(/"runId":"[^"]+"/);
    expect(nodeLog).toMatch(/"level":20/);
    expect(nodeLog.length).toBeGreaterThan(500);
    for (const [name, secret] of Object.entries(SECRETS)) {
      expect({ name, inEdgeLog: edgeLog.includes(secret) }).toEqual({ name, inEdgeLog: false });
      expect({ name, inNodeLog: nodeLog.includes(secret) }).toEqual({ name, inNodeLog: false });
    }
  }, 60_000);
});
