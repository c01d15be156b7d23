// Cross-process end to end (issue 30, "tenants stay apart"): a real `iop-edge serve` and a real `iop-node run`
// in front of the stand-in CLI agent (packages/testkit/bin/fake-cli.mjs, which remembers a codeword per session
// and says which directory it works in) and a fake OpenAI-compatible server, driven with the official `openai`
// and `@a2a-js/sdk` clients.
// - Key A tells the one CLI model (capacity 1) a codeword in its own workspace; A's next request continues A's
//   conversation, key B's requests never see A's codeword, workspace or path (also not in an error).
// - Keys D and E that name no workspace work in directories of their own (issue 43); once D's session in a named
//   directory has ended, E is refused that directory (workspace_not_allowed).
// - A2A contexts of keys `team` and `team-a` never meet, even when the context ids are chosen so that the old
//   `a2a-<key>-<context>` session ids were equal.
// - A key with a 60-token daily budget streams 4 answers of 20 tokens, cutting each before its end: the
//   delivered tokens are recorded, so the 5th request gets 429 budget_exhausted, and `iop-edge usage --by key`
//   shows them.
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import type { Task as SdkTask } from '@a2a-js/sdk';
import { startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { create, principalDigest } from '@iop/wire';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  freePort,
  ProcessGroup,
  repoRoot,
  runEdgeCommand,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { FABRIC_TOKEN, VLLM_SERVED } from '../support/fabric-config.js';

jest.setTimeout(120_000);

const KEY_A = 'sk-e2e-tenant-a-0123456789';
const KEY_B = 'sk-e2e-tenant-b-0123456789';
const KEY_C = 'sk-e2e-tenant-c-0123456789';
const KEY_D = 'sk-e2e-tenant-d-0123456789';
const KEY_E = 'sk-e2e-tenant-e-0123456789';
const KEY_TEAM = 'sk-e2e-tenant-team-0123456789';
const KEY_TEAM_A = 'sk-e2e-tenant-team-a-0123456789';
const KEY_BUDGET = 'sk-e2e-tenant-budget-0123456789';
const CLI_MODEL = 'e2e-agent';
const STREAM_MODEL = 'e2e-qwen';
const CODEWORD = 'ALPHA-7731';

const group = new ProcessGroup();
let vllm: FakeServer;
let edge: EdgeProcess;
let admin: AdminClient;
let workspaceA: string;
let workspaceB: string;
let workspaceD: string;

function openai(key: string): OpenAI {
  return new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000 });
}

/** One chat turn on the CLI model; the answer's text, or the API error's whole body as text. */
async function ask(key: string, prompt: string, workspace?: string): Promise<string> {
  try {
    const answer = await openai(key).chat.completions.create({
      model: CLI_MODEL,
      messages: [{ role: 'user', content: prompt }],
      ...(workspace ? { metadata: { workspace } } : {}),
    });
    return answer.choices[0]?.message.content ?? '';
  } catch (error) {
    if (error instanceof OpenAI.APIError) return `error ${error.status} ${JSON.stringify(error.error)}`;
    throw error;
  }
}

async function a2aClient(key: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
  });
  const address = edge.addresses.a2a;
  return new ClientFactory(options).createFromUrl(address.startsWith('http') ? address : `http://${address}`);
}

async function a2aTurn(client: Client, text: string, contextId: string): Promise<SdkTask> {
  const result = await client.sendMessage({
    message: {
      kind: 'message',
      messageId: `m-${Math.random().toString(36).slice(2)}`,
      role: 'user',
      parts: [{ kind: 'text', text }],
      contextId,
    },
  });
  if (result.kind !== 'task') throw new Error(`expected a task, got ${JSON.stringify(result)}`);
  return result;
}

function taskText(task: SdkTask): string {
  return (task.artifacts ?? [])
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.kind === 'text' ? part.text : ''))
    .join('');
}

/** Ends every CLI session of the key with id `principal` on n1 (through the admin API). */
async function endSessionsOf(principal: string): Promise<void> {
  const listed = await admin.nodeCommand(
    'n1',
    create.nodeCommandRequest({ command: 'sessions', adapter: 'cli' }),
  );
  const prefix = `k${principalDigest(principal)}.`;
  for (const [field, value] of Object.entries(listed.result)) {
    if (!/^session\.\d+\.session$/.test(field) || !value.startsWith(prefix)) continue;
    await admin.terminateSession({ node: 'n1', adapter: 'cli', target: 'agent', sessionId: value });
  }
}

async function idle(): Promise<void> {
  await waitUntil(
    async () => (await admin.listProviders()).every((provider) => provider.inFlight === 0),
    10_000,
    () => `every provider idle\n${edge.describe()}`,
  );
}

beforeAll(async () => {
  // 20 tokens of 4 characters each (" abc"), one every 60 ms: a client can cut a stream before its end.
  vllm = await startFakeOpenAI({
    behavior: {
      models: [VLLM_SERVED],
      tokenCount: 20,
      tokenDelayMs: 60,
      reply: ({ tokenCount }) => Array.from({ length: tokenCount }, () => 'abc').join(' '),
    },
  });
  const dir = await group.tempDir('iop-e2e-tenants-');
  const workspaces = await realpath(await group.tempDir('iop-e2e-tenants-ws-'));
  workspaceA = path.join(workspaces, 'tenant-a');
  workspaceB = path.join(workspaces, 'tenant-b');
  await mkdir(workspaceA);
  await mkdir(workspaceB);
  workspaceD = path.join(workspaces, 'tenant-d');
  await mkdir(workspaceD);
  const config = {
    edge: {
      id: 'edge-e2e',
      listen: `127.0.0.1:${await freePort()}`,
      data_dir: `${dir}/data`,
      register_timeout_ms: 2000,
      heartbeat_interval_ms: 500,
      heartbeat_timeout_ms: 10_000,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: {
      enabled: true,
      listen: '127.0.0.1:0',
      timeout_sec: 60,
      api_keys: [
        { id: 'tenant-a', key: KEY_A },
        { id: 'tenant-b', key: KEY_B },
        { id: 'tenant-c', key: KEY_C },
        { id: 'tenant-d', key: KEY_D },
        { id: 'tenant-e', key: KEY_E },
        { id: 'team', key: KEY_TEAM },
        { id: 'team-a', key: KEY_TEAM_A },
        { id: 'budget', key: KEY_BUDGET, token_budget: { tokens: 60, per: 'day' } },
      ],
    },
    a2a: { enabled: true, listen: '127.0.0.1:0', path: '/a2a', node: 'n1', adapter: 'cli', target: 'agent' },
    models: [
      { id: CLI_MODEL, providers: { 'n1-cli': 'agent' } },
      { id: STREAM_MODEL, providers: { 'n1-vllm': VLLM_SERVED } },
    ],
    nodes: [
      {
        id: 'n1',
        alias: 'n1',
        token: FABRIC_TOKEN,
        runtime: { max_concurrency: 8, health_probe_interval_ms: 0 },
        adapters: {
          instances: [
            {
              name: 'cli',
              type: 'cli',
              enabled: true,
              max_sessions: 16,
              // The node's working directory (the repository: where bin/ is) and the tenants' workspaces.
              workspace_roots: [repoRoot, workspaces],
              profiles: {
                // Generous: on a loaded machine the agent's first line may take a while, and idle ends an answer.
                agent: { command: 'bin/iop-fake-cli', mode: 'persistent', idle_timeout_ms: 1500 },
              },
            },
            {
              name: 'vllm',
              type: 'openai_compat',
              enabled: true,
              provider: 'vllm',
              base_url: `${vllm.url}/v1`,
              request_timeout_ms: 30_000,
            },
          ],
        },
        providers: [
          {
            id: 'n1-cli',
            type: 'cli',
            category: 'cli',
            adapter: 'cli',
            models: ['agent'],
            capacity: 1,
            max_queue: 8,
            queue_timeout_ms: 30_000,
          },
          {
            id: 'n1-vllm',
            type: 'vllm',
            category: 'api',
            adapter: 'vllm',
            models: [VLLM_SERVED],
            capacity: 4,
            max_queue: 8,
            queue_timeout_ms: 30_000,
          },
        ],
      },
    ],
  };
  edge = await startEdgeProcess(group, dir, config);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: 'n1',
    token: FABRIC_TOKEN,
    dataDir: await group.tempDir('iop-e2e-tenants-node-'),
  });
  await waitUntil(
    async () => {
      const providers = await admin.listProviders();
      return providers.length === 2 && providers.every((provider) => provider.status === 'ready');
    },
    30_000,
    () => `providers ready\n${edge.describe()}`,
  );
}, 120_000);

afterAll(async () => {
  admin?.close();
  await group.close();
  await vllm?.close();
});

describe('tenants stay apart on one edge', () => {
  it("key B never sees key A's conversation or workspace on the same CLI model (capacity 1)", async () => {
    expect(await ask(KEY_A, `remember codeword ${CODEWORD}`, workspaceA)).toContain('ECHO_OK');
    const again = await ask(KEY_A, 'what is the codeword? where are you?', workspaceA);
    // A's second request continues A's conversation, in A's workspace.
    expect(again).toContain(`CODEWORD ${CODEWORD}`);
    expect(again).toContain(`CWD ${workspaceA}`);

    // In B's own workspace (A's session refused that with workspace_mismatch naming A's path).
    const ownWorkspace = await ask(KEY_B, 'what is the codeword? where are you?', workspaceB);
    expect(ownWorkspace).toContain('CODEWORD NONE');
    expect(ownWorkspace).toContain(`CWD ${workspaceB}`);
    // Without a workspace B continues its own session (A's was answered from A's conversation and directory).
    const plain = await ask(KEY_B, 'what is the codeword? where are you?');
    expect(plain).toContain('CODEWORD NONE');
    expect(plain).toContain(`CWD ${workspaceB}`);
    for (const answer of [plain, ownWorkspace]) {
      expect(answer).not.toContain(CODEWORD);
      expect(answer).not.toContain(workspaceA);
    }
    // Naming A's directory does not get B in: B's session stays in B's directory (and says only that).
    const mismatch = await ask(KEY_B, 'codeword?', workspaceA);
    expect(mismatch).toMatch(/^error 400 .*workspace_mismatch/);
    expect(mismatch).toContain(`runs in ${workspaceB}`);
    // A key without a session yet is refused A's directory and the one above it, naming only its own request.
    for (const foreign of [workspaceA, path.dirname(workspaceA)]) {
      const refused = await ask(KEY_C, 'codeword? where are you?', foreign);
      expect(refused).toMatch(/^error 400 .*workspace_not_allowed/);
      expect(refused).not.toContain(CODEWORD);
      if (foreign !== workspaceA) expect(refused).not.toContain(workspaceA);
    }
    // B's turns did not disturb A's session.
    expect(await ask(KEY_A, 'codeword?', workspaceA)).toContain(`CODEWORD ${CODEWORD}`);
  });

  it("keys without a workspace work apart; a key's named directory stays its own after its session ended", async () => {
    const cwdOf = (answer: string) => /CWD (\S+)/.exec(answer)?.[1];
    const atD = cwdOf(await ask(KEY_D, 'where are you?'));
    const atE = cwdOf(await ask(KEY_E, 'where are you?'));
    expect(atD).toBe(path.join(repoRoot, '.iop-workspaces', `k${principalDigest('tenant-d')}`));
    expect(atE).toBe(path.join(repoRoot, '.iop-workspaces', `k${principalDigest('tenant-e')}`));
    // D's conversation without a workspace ends; its next one works in a directory it names, then ends too.
    await endSessionsOf('tenant-d');
    expect(await ask(KEY_D, 'where are you?', workspaceD)).toContain(`CWD ${workspaceD}`);
    await endSessionsOf('tenant-d');
    // No session of D is live now: a new session of E is refused D's directory and D's default one.
    await endSessionsOf('tenant-e');
    for (const foreign of [workspaceD, atD ?? '']) {
      const refused = await ask(KEY_E, 'where are you?', foreign);
      expect(refused).toMatch(/^error 400 .*workspace_not_allowed/);
    }
    expect(await ask(KEY_D, 'where are you?', workspaceD)).toContain(`CWD ${workspaceD}`);
  });

  it('A2A contexts of keys `team` and `team-a` never meet (official @a2a-js/sdk client)', async () => {
    const teamA = await a2aClient(KEY_TEAM_A);
    const team = await a2aClient(KEY_TEAM);
    // Under the old spelling `a2a-<key>-<context>` both of these were session `a2a-team-a-ctx-1`.
    const told = await a2aTurn(teamA, `remember codeword ${CODEWORD}`, 'ctx-1');
    expect(told.status.state).toBe('completed');
    const other = await a2aTurn(team, 'codeword?', 'a-ctx-1');
    expect(taskText(other)).toContain('CODEWORD NONE');
    expect(taskText(other)).not.toContain(CODEWORD);
    // The same context id under another key is another context too.
    const sameId = await a2aTurn(team, 'codeword?', 'ctx-1');
    expect(taskText(sameId)).toContain('CODEWORD NONE');
    // team-a's own context continues, and its task is not visible to team.
    const continued = await a2aTurn(teamA, 'codeword?', 'ctx-1');
    expect(taskText(continued)).toContain(`CODEWORD ${CODEWORD}`);
    await expect(team.getTask({ id: continued.id })).rejects.toThrow();
  });

  it('a 60-token budget counts streams cut before their end: the 5th request gets 429 budget_exhausted', async () => {
    const client = openai(KEY_BUDGET);
    const received: number[] = [];
    for (let stream = 0; stream < 4; stream += 1) {
      const chunks = await client.chat.completions.create({
        model: STREAM_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 20,
        stream: true,
      });
      let tokens = 0;
      for await (const chunk of chunks) {
        if (chunk.choices[0]?.delta.content) tokens += 1;
        // Cut by the client 4 tokens before the end (the backend has not reported usage yet).
        if (tokens === 16) {
          chunks.controller.abort();
          break;
        }
      }
      received.push(tokens);
      // The cut run has ended on the edge and settled its reservation before the next request.
      await idle();
    }
    expect(received).toEqual([16, 16, 16, 16]);
    let fifth: unknown;
    try {
      await client.chat.completions.create({
        model: STREAM_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 20,
      });
    } catch (error) {
      fifth = error;
    }
    expect(fifth).toBeInstanceOf(OpenAI.APIError);
    expect((fifth as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((fifth as InstanceType<typeof OpenAI.APIError>).code).toBe('budget_exhausted');

    const usage = await runEdgeCommand(group, [
      'usage',
      '--by',
      'key',
      '--json',
      '--since',
      'all',
      '--addr',
      edge.addresses.admin,
    ]);
    expect(usage.status.code).toBe(0);
    const row = (
      JSON.parse(usage.stdout) as {
        groups: { group: string; requests: number; input_tokens: number; output_tokens: number }[];
      }
    ).groups.find((entry) => entry.group === 'budget');
    // Each stream delivered 16-20 tokens of 4 characters (the edge may have had a few more than the client read)
    // for a 1-token prompt: what reached the client is counted, not 0.
    expect(row?.input_tokens).toBe(4);
    expect(row?.output_tokens).toBeGreaterThanOrEqual(4 * 16);
    expect(row?.output_tokens).toBeLessThanOrEqual(4 * 20);
    process.stdout.write(`[e2e tenants] budget key usage after 4 cut streams: ${JSON.stringify(row)}\n`);
  });
});
