// Cross-process end to end of issue 42 ("agents on the fabric"), the transport half: a real edge process and a
// real `iop-node run` process; a one-shot CLI profile (the testkit fake CLI in its `--model-calls` mode) whose
// `fabric_model` is the node's fake Ollama model. Each run of the agent gets a model endpoint on the node's
// loopback (`{model_base_url}`, `{model_api_key}`, `{model}` filled in its env); the agent's calls travel over the
// node's link into the edge's own OpenAI surface as child runs and are answered by the fake Ollama. After the run,
// its endpoint is gone and its secret is refused on another run's endpoint.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  startEdgeProcess,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { OLLAMA_SERVED } from '../support/fabric-config.js';
import { AGENT_MODEL, agentFabricConfig } from '../support/agent-fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  stopFabric,
  waitForProvidersReady,
} from '../support/fabric-setup.js';

jest.setTimeout(60_000);

const CALLS = 5;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;
let client: OpenAI;

async function runAgent(prompt: string): Promise<string> {
  const answer = await client.chat.completions.create({
    model: AGENT_MODEL,
    messages: [{ role: 'user', content: prompt }],
  });
  return answer.choices[0]?.message.content ?? '';
}

function ollamaChats(): number {
  return ollama.requests.filter((request) => request.path === '/api/chat').length;
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-agent-fabric-');
  edge = await startEdgeProcess(
    group,
    dir,
    agentFabricConfig({
      dataDir: `${dir}/data`,
      node: { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 8 },
      calls: CALLS,
    }),
  );
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
  client = new OpenAI({
    baseURL: `${edge.addresses.openai}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 45_000,
  });
}, 90_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('an agent run calls the pool through its node-loopback model endpoint', () => {
  let endpoint: { base: string; key: string };

  it('answers every model call of the agent from the fake Ollama through the edge', async () => {
    const before = ollamaChats();
    const output = await runAgent('alpha');
    const lines = output.split('\n').filter((line) => line !== '');
    const [, base = '', key = ''] = /^MODEL_ENDPOINT (\S+) (\S+)$/.exec(lines[0] ?? '') ?? [];
    endpoint = { base, key };
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(key).toMatch(/^iop-run-[A-Za-z0-9_-]{43}$/);
    const calls = lines.filter((line) => line.startsWith('MODEL_CALL '));
    expect(calls).toHaveLength(CALLS);
    for (const [index, line] of calls.entries()) {
      // `MODEL_CALL <i> 200 <the fake's reply>`, streamed (odd) and not (even).
      expect(line).toMatch(new RegExp(`^MODEL_CALL ${index + 1} 200 \\S`));
    }
    expect(lines).toContain('MODEL_CALLS_DONE');
    // Each call reached the node's Ollama as the model's served name.
    expect(ollamaChats() - before).toBe(CALLS);
    const served = ollama.requests.filter((request) => request.path === '/api/chat').slice(-CALLS);
    for (const request of served) expect((request.body as { model?: string }).model).toBe(OLLAMA_SERVED);
  });

  it('closes the endpoint with its run and refuses the run’s secret afterwards', async () => {
    expect(endpoint.key).not.toBe('');
    // The listener lived only as long as its run.
    await expect(fetch(`${endpoint.base}/models`)).rejects.toThrow();
    // The stale secret, presented on a live run's endpoint, is refused by the edge (not that run's secret).
    const before = ollamaChats();
    const output = await runAgent(`use-key ${endpoint.key}`);
    const calls = output.split('\n').filter((line) => line.startsWith('MODEL_CALL '));
    expect(calls).toHaveLength(CALLS);
    for (const line of calls) expect(line).toMatch(/^MODEL_CALL \d+ 401 /);
    expect(ollamaChats()).toBe(before);
  });

  it('leaves every provider idle afterwards', async () => {
    const providers = await admin.listProviders();
    expect(providers.every((provider) => provider.inFlight === 0 && provider.queued === 0)).toBe(true);
  });
});
