// Cross-process end to end (issue 21): API keys with limits on a real edge process and a real node process in
// front of fake inference servers, with the official `openai` client. Real time for rpm (one minute window: the
// 6th request of a key with rpm 5 is refused at once); usage read back with `iop-edge usage --json` must equal
// the token counts the fake backends reported; a spent budget stays spent across an edge restart.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  freePort,
  ProcessGroup,
  runEdgeCommand,
  startEdgeProcess,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { MODEL_LLAMA, MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  waitForProvidersReady,
  stopFabric,
} from '../support/fabric-setup.js';

jest.setTimeout(90_000);

const KEY_A = 'sk-e2e-team-a-only-qwen';
const KEY_B = 'sk-e2e-team-b-rpm-5';
const KEY_C = 'sk-e2e-team-c-budget-100';

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;
let edge: EdgeProcess;
let admin: AdminClient;

/** Token counts the backends reported, as the clients received them: key → model → [in, out]. */
const reported = new Map<string, Map<string, [number, number]>>();

function client(key: string): OpenAI {
  return new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });
}

async function chat(keyId: string, key: string, model: string): Promise<void> {
  const answer = await client(key).chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'alpha beta gamma' }],
    max_tokens: 20,
  });
  const usage = answer.usage;
  if (!usage) throw new Error('the backend reported no usage');
  const models = reported.get(keyId) ?? new Map<string, [number, number]>();
  const [input, output] = models.get(model) ?? [0, 0];
  models.set(model, [input + usage.prompt_tokens, output + usage.completion_tokens]);
  reported.set(keyId, models);
}

async function apiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('expected an API error');
}

async function startEdge(name: string): Promise<void> {
  edge = await startEdgeProcess(group, dir, config, name);
  admin?.close();
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
}

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  dir = await group.tempDir('iop-e2e-governance-');
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    transportListen: `127.0.0.1:${await freePort()}`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
  });
  config = {
    ...base,
    openai: {
      ...(base['openai'] as Record<string, unknown>),
      api_keys: [
        { id: 'team-a', key: KEY_A, models: [MODEL_QWEN] },
        { id: 'team-b', key: KEY_B, rpm: 5 },
        { id: 'team-c', key: KEY_C, token_budget: { tokens: 100, per: 'day' } },
      ],
    },
  };
  await startEdge('edge-1');
  await startFabricNode(group, edge);
  await waitForProvidersReady(admin, () => edge.describe());
}, 120_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

describe('API keys with limits, usage and budgets across processes', () => {
  it('refuses a model outside the allow-list as 404 and unknown keys as 401', async () => {
    await chat('team-a', KEY_A, MODEL_QWEN);
    await chat('team-a', KEY_A, MODEL_QWEN);
    const outside = await apiError(
      client(KEY_A).chat.completions.create({
        model: MODEL_LLAMA,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(outside.status).toBe(404);
    expect(outside.code).toBe('model_not_found');
    expect((await apiError(client('sk-nobody').models.list())).status).toBe(401);
  });

  it('rpm 5 in real time: five requests pass, the sixth in the same minute gets 429 rate_limited', async () => {
    await chat('team-b', KEY_B, MODEL_LLAMA);
    await chat('team-b', KEY_B, MODEL_LLAMA);
    await chat('team-b', KEY_B, MODEL_QWEN);
    await chat('team-b', KEY_B, MODEL_QWEN);
    await chat('team-b', KEY_B, MODEL_QWEN);
    const sixth = await apiError(
      client(KEY_B).chat.completions.create({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(sixth.status).toBe(429);
    expect(sixth.code).toBe('rate_limited');
    const retryAfter = Number(sixth.headers?.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('a 100-token budget is refused once the backend-reported usage passes it', async () => {
    let spent = 0;
    for (let attempt = 0; attempt < 30; attempt += 1) {
      const before = spent;
      const outcome = await chat('team-c', KEY_C, MODEL_QWEN).then(
        () => 'ok' as const,
        (error: unknown) => error,
      );
      const [input, output] = reported.get('team-c')?.get(MODEL_QWEN) ?? [0, 0];
      spent = input + output;
      if (outcome !== 'ok') {
        expect(outcome).toBeInstanceOf(OpenAI.APIError);
        expect((outcome as InstanceType<typeof OpenAI.APIError>).code).toBe('budget_exhausted');
        // Refused only once what was reported reached the budget.
        expect(before).toBeGreaterThanOrEqual(100);
        return;
      }
    }
    throw new Error(`the budget never refused (spent ${spent})`);
  });

  it('iop-edge usage --json shows exactly the tokens the backends reported, per key and per model', async () => {
    const byKey = await runEdgeCommand(group, [
      'usage',
      '--json',
      '--since',
      'all',
      '--addr',
      edge.addresses.admin,
    ]);
    expect(byKey.status.code).toBe(0);
    const keys = (
      JSON.parse(byKey.stdout) as {
        groups: { group: string; input_tokens: number; output_tokens: number; rejected: number }[];
      }
    ).groups;
    for (const [keyId, models] of reported) {
      const input = [...models.values()].reduce((sum, [value]) => sum + value, 0);
      const output = [...models.values()].reduce((sum, [, value]) => sum + value, 0);
      expect(keys.find((row) => row.group === keyId)).toMatchObject({
        input_tokens: input,
        output_tokens: output,
      });
    }
    const byModel = await runEdgeCommand(group, [
      'usage',
      '--by',
      'model',
      '--json',
      '--since',
      'all',
      '--addr',
      edge.addresses.admin,
    ]);
    const models = (
      JSON.parse(byModel.stdout) as {
        groups: { group: string; input_tokens: number; output_tokens: number }[];
      }
    ).groups;
    for (const model of [MODEL_LLAMA, MODEL_QWEN]) {
      let input = 0;
      let output = 0;
      for (const perModel of reported.values()) {
        const [modelInput, modelOutput] = perModel.get(model) ?? [0, 0];
        input += modelInput;
        output += modelOutput;
      }
      expect(models.find((row) => row.group === model)).toMatchObject({
        input_tokens: input,
        output_tokens: output,
      });
    }
  });

  it('keeps the spent budget across an edge restart', async () => {
    expect((await edge.stop('SIGTERM')).code).toBe(0);
    await startEdge('edge-2');
    const refused = await apiError(
      client(KEY_C).chat.completions.create({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('budget_exhausted');
  });
});
