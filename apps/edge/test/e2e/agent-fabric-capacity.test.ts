// Issue 42's headline case across processes: a node with `max_concurrency: 2` runs agents whose `fabric_model` is
// served by that same node's Ollama (capacity 2). Four agent runs start at once and each makes five model calls
// through its node-loopback endpoint: the calls are child runs of their agent run, so they neither wait for a node
// slot their own parents hold nor deadlock — all four complete, none times out, and the Ollama never sees more
// requests at once than its provider's capacity.
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
import { AGENT_MODEL, agentFabricConfig } from '../support/agent-fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  stopFabric,
  waitForProvidersReady,
} from '../support/fabric-setup.js';
import { peakConcurrency } from '../support/peak-concurrency.js';

jest.setTimeout(120_000);

const AGENTS = 4;
const CALLS = 5;
const OLLAMA_CAPACITY = 2;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;
let client: OpenAI;

beforeAll(async () => {
  // Tokens spaced in time, so calls of different agents overlap at the backend.
  ({ ollama, vllm } = await startFakeBackends({ tokenCount: 6, tokenDelayMs: 15 }));
  const dir = await group.tempDir('iop-e2e-agent-capacity-');
  edge = await startEdgeProcess(
    group,
    dir,
    agentFabricConfig({
      dataDir: `${dir}/data`,
      node: {
        id: 'n1',
        ollamaUrl: ollama.url,
        vllmUrl: vllm.url,
        capacity: OLLAMA_CAPACITY,
        maxConcurrency: 2,
        queueTimeoutMs: 45_000,
      },
      calls: CALLS,
      agentCapacity: AGENTS,
    }),
  );
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
  client = new OpenAI({
    baseURL: `${edge.addresses.openai}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 100_000,
  });
}, 90_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('agents whose model is served by their own node (max_concurrency 2)', () => {
  it('completes four agent runs of five model calls each, within the Ollama provider’s capacity', async () => {
    const before = ollama.requests.length;
    const outputs = await Promise.all(
      Array.from({ length: AGENTS }, (_, index) =>
        client.chat.completions
          .create({ model: AGENT_MODEL, messages: [{ role: 'user', content: `agent ${index}` }] })
          .then((answer) => answer.choices[0]?.message.content ?? ''),
      ),
    );
    for (const output of outputs) {
      const calls = output.split('\n').filter((line) => line.startsWith('MODEL_CALL '));
      expect(calls).toHaveLength(CALLS);
      for (const line of calls) expect(line).toMatch(/^MODEL_CALL \d+ 200 \S/);
      expect(output).toContain('MODEL_CALLS_DONE');
    }
    const chats = ollama.requests.slice(before).filter((request) => request.path === '/api/chat');
    expect(chats).toHaveLength(AGENTS * CALLS);
    expect(peakConcurrency(chats)).toBeLessThanOrEqual(OLLAMA_CAPACITY);
    const providers = await admin.listProviders();
    expect(providers.every((provider) => provider.inFlight === 0 && provider.queued === 0)).toBe(true);
  });
});
