// Issue 42 across processes: an agent's model calls are charged to the key that started the agent. A real edge
// and a real node; the agent is the testkit fake CLI (`--model-calls 3 --fail-on-model-error`) whose calls, made
// with its run's secret only, travel over the node's link as child runs and are answered by the node's fake
// Ollama. Read back as an operator does — the built `iop-edge usage --by key --json --config edge.yaml` — the
// children's tokens are key A's, and another key holds only its own. A key whose token budget runs out during an
// agent run gets the next model call refused (the agent sees its model's 429 `budget_exhausted`); the fake agent
// fails on it, and the caller of the agent run receives an error that names the budget.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  freePort,
  metricSum,
  ProcessGroup,
  repoRoot,
  scrapeMetrics,
  startEdgeProcess,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { MODEL_LLAMA } from '../support/fabric-config.js';
import { AGENT_MODEL, agentFabricConfig } from '../support/agent-fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  stopFabric,
  waitForProvidersReady,
} from '../support/fabric-setup.js';

jest.setTimeout(50_000);

const CALLS = 3;
const KEY_A = 'sk-e2e-agent-fabric-team-a';
const KEY_B = 'sk-e2e-agent-fabric-team-b';
const KEY_C = 'sk-e2e-agent-fabric-team-c-budget';
/**
 * Team C's budget: more than one model call of its agent (about 11 tokens each), less than two. Reservations are
 * prompt estimates only (`usage.reserve_max_tokens: 0`): a live agent run's reservation counts against its key's
 * budget, and the default answer reserve (1024) would refuse the agent's very first call.
 */
const BUDGET_C = 15;

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;

function client(key: string): OpenAI {
  return new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey: key, maxRetries: 0, timeout: 40_000 });
}

function ollamaChats(): number {
  return ollama.requests.filter((request) => request.path === '/api/chat').length;
}

interface UsageRow {
  group: string;
  runs: number;
  input_tokens: number;
  output_tokens: number;
}

/** `iop-edge usage --by <by> --json --since all --config <edge.yaml>` with the built CLI, as an operator runs it. */
async function usageBy(by: 'key' | 'model'): Promise<Map<string, UsageRow>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      path.join(repoRoot, 'apps/edge/dist/main.js'),
      'usage',
      '--by',
      by,
      '--json',
      '--since',
      'all',
      '--config',
      edge.configPath,
    ],
    { timeout: 20_000 },
  );
  const rows = (JSON.parse(stdout) as { groups: UsageRow[] }).groups;
  return new Map(rows.map((row) => [row.group, row]));
}

function tokens(row: UsageRow | undefined): number {
  return (row?.input_tokens ?? 0) + (row?.output_tokens ?? 0);
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-agent-charging-');
  const config = agentFabricConfig({
    dataDir: `${dir}/data`,
    node: { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 },
    calls: CALLS,
    agentArgs: ['--fail-on-model-error'],
  });
  const openai = config['openai'] as Record<string, unknown>;
  openai['api_keys'] = [
    { id: 'team-a', key: KEY_A },
    { id: 'team-b', key: KEY_B },
    { id: 'team-c', key: KEY_C, token_budget: { tokens: BUDGET_C, per: 'day' } },
  ];
  config['usage'] = { reserve_max_tokens: 0 };
  // A fixed admin address in edge.yaml, so `iop-edge usage --config` finds the running edge.
  config['refresh'] = { enabled: true, listen: `127.0.0.1:${await freePort()}` };
  edge = await startEdgeProcess(group, dir, config);
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
}, 60_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe("an agent's model calls are charged to the key that started it", () => {
  it('iop-edge usage --by key shows the children’s tokens under key A and only its own under key B', async () => {
    // Key B's own call of the same model the agent uses.
    const direct = await client(KEY_B).chat.completions.create({
      model: MODEL_LLAMA,
      messages: [{ role: 'user', content: 'team b asks once' }],
    });
    const ownOfB = (direct.usage?.prompt_tokens ?? 0) + (direct.usage?.completion_tokens ?? 0);
    expect(ownOfB).toBeGreaterThan(0);

    const before = ollamaChats();
    const answer = await client(KEY_A).chat.completions.create({
      model: AGENT_MODEL,
      messages: [{ role: 'user', content: 'team a agent' }],
    });
    const output = answer.choices[0]?.message.content ?? '';
    const calls = output.split('\n').filter((line) => line.startsWith('MODEL_CALL '));
    expect(calls).toHaveLength(CALLS);
    for (const line of calls) expect(line).toMatch(/^MODEL_CALL \d+ 200 \S/);
    expect(ollamaChats() - before).toBe(CALLS);

    const byKey = await usageBy('key');
    const byModel = await usageBy('model');
    // Every token of the agent's model is key A's children's or key B's own call: nothing of the agent went to B.
    const children = tokens(byModel.get(MODEL_LLAMA)) - ownOfB;
    expect(children).toBeGreaterThan(0);
    expect(tokens(byKey.get('team-b'))).toBe(ownOfB);
    expect(byKey.get('team-b')?.runs).toBe(1);
    // Key A: its children's tokens and the agent run's own (the edge's estimate of what the CLI printed, as the
    // fake CLI reports no usage), each counted once.
    expect(tokens(byKey.get('team-a'))).toBe(children + tokens(byModel.get(AGENT_MODEL)));
    // Key A's runs: the agent run and its three children.
    expect(byKey.get('team-a')?.runs).toBe(1 + CALLS);
    expect(byKey.has('(anonymous)')).toBe(false);
  });

  it('refuses the next model call once the key’s budget is spent, and the agent run ends with that error', async () => {
    const metrics = () => scrapeMetrics(edge.addresses.metrics);
    const rejectedBefore = metricSum(await metrics(), 'iop_child_runs_total', { result: 'rejected' });
    const before = ollamaChats();
    const error = await client(KEY_C)
      .chat.completions.create({
        model: AGENT_MODEL,
        messages: [{ role: 'user', content: 'team c agent' }],
      })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    // The caller of the agent run gets an error naming the budget (the agent's stderr, as it exited).
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.message).toMatch(/model call \d failed: 429 budget_exhausted/);
    const refusedCall = Number(/model call (\d) failed/.exec(apiError.message)?.[1]);
    // At least the first call was answered; the refused one and those after it never reached the backend.
    expect(refusedCall).toBeGreaterThanOrEqual(2);
    expect(ollamaChats() - before).toBe(refusedCall - 1);
    expect(metricSum(await metrics(), 'iop_child_runs_total', { result: 'rejected' })).toBe(
      rejectedBefore + 1,
    );
    // What was spent is key C's, at least its budget.
    const byKey = await usageBy('key');
    expect(tokens(byKey.get('team-c'))).toBeGreaterThanOrEqual(BUDGET_C);
    const providers = await admin.listProviders();
    expect(providers.every((provider) => provider.inFlight === 0 && provider.queued === 0)).toBe(true);
  });
});
