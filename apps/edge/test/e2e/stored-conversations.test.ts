// Stored conversations with the official `openai` SDK against real processes (issue 44): `iop-edge serve`, a node
// and the fake vLLM backend. Turn 1 is stored (`store: true`); turn 2 names it in `previous_response_id` and the
// backend receives turn 1's user message and assistant output before turn 2's input; another key gets 404 for
// the id; input_items lists turn 1's input; DELETE then GET is a 404; and after `serve` restarts over the same
// data_dir, a stored turn is still continued.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI from 'openai';
import type { FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  freePort,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';

jest.setTimeout(120_000);

const KEY_A = 'sk-e2e-conversations-team-a';
const KEY_B = 'sk-e2e-conversations-team-b';

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let dir: string;
let config: Record<string, unknown>;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  dir = await group.tempDir('iop-e2e-conversations-');
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    transportListen: `127.0.0.1:${await freePort()}`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
  });
  config = {
    ...base,
    openai: {
      ...(base['openai'] as Record<string, unknown>),
      api_keys: [
        { id: 'team-a', key: KEY_A },
        { id: 'team-b', key: KEY_B },
      ],
    },
  };
});

afterAll(async () => {
  await group.close();
  await ollama?.close();
  await vllm?.close();
});

function client(edge: EdgeProcess, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey, maxRetries: 0, timeout: 20_000 });
}

async function served(sdk: OpenAI, edge: EdgeProcess): Promise<void> {
  await waitUntil(
    async () =>
      sdk.chat.completions
        .create({ model: MODEL_QWEN, messages: [{ role: 'user', content: 'ready' }] })
        .then(() => true)
        .catch(() => false),
    20_000,
    () => `edge serves\n${edge.describe()}`,
  );
}

/** The chat messages the fake backend received in its last request, as [role, text]. */
function lastBackendConversation(): [string, string][] {
  const body = vllm.requests.at(-1)?.body as { messages?: { role: string; content: unknown }[] } | undefined;
  return (body?.messages ?? []).map((message) => [message.role, textOf(message.content)]);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => {
        const text = (part as { text?: unknown }).text;
        return typeof text === 'string' ? text : '';
      })
      .join('');
  return '';
}

async function statusOf(promise: Promise<unknown>): Promise<number | undefined> {
  try {
    await promise;
    return 200;
  } catch (error) {
    return (error as { status?: number }).status;
  }
}

describe('stored conversations (previous_response_id)', () => {
  it('continues a stored turn, owner only, through input_items, DELETE and a restart', async () => {
    const first = await startEdgeProcess(group, dir, config, 'edge-1');
    await startFabricNode(group, first, { retryIntervalMs: 300, maxRetries: 1000 });
    const a = client(first, KEY_A);
    const b = client(first, KEY_B);
    await served(a, first);

    const turn1 = await a.responses.create({ model: MODEL_QWEN, input: 'my name is Ada', store: true });
    expect(turn1.status).toBe('completed');
    const answer1 = turn1.output_text;
    expect(answer1.length).toBeGreaterThan(0);

    const turn2 = await a.responses.create({
      model: MODEL_QWEN,
      input: 'what is my name?',
      previous_response_id: turn1.id,
    });
    expect(turn2.previous_response_id).toBe(turn1.id);
    expect(lastBackendConversation()).toEqual([
      ['user', 'my name is Ada'],
      ['assistant', answer1],
      ['user', 'what is my name?'],
    ]);

    // Streaming continues the chain too.
    const streamed = await a.responses
      .stream({ model: MODEL_QWEN, input: 'and again?', previous_response_id: turn2.id })
      .finalResponse();
    expect(streamed.status).toBe('completed');
    expect(lastBackendConversation().map(([role]) => role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);

    // Another key: the id does not exist for it.
    expect(
      await statusOf(b.responses.create({ model: MODEL_QWEN, input: 'x', previous_response_id: turn1.id })),
    ).toBe(404);
    expect(await statusOf(b.responses.retrieve(turn1.id))).toBe(404);

    const items = await a.responses.inputItems.list(turn1.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'my name is Ada' }],
    });
    expect((await a.responses.retrieve(turn1.id)).id).toBe(turn1.id);

    // A restart over the same data_dir: turn 2 is still continued.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    const second = await startEdgeProcess(group, dir, config, 'edge-2');
    const a2 = client(second, KEY_A);
    await served(a2, second);
    await a2.responses.create({
      model: MODEL_QWEN,
      input: 'after the restart',
      previous_response_id: turn2.id,
    });
    expect(lastBackendConversation()).toEqual([
      ['user', 'my name is Ada'],
      ['assistant', answer1],
      ['user', 'what is my name?'],
      ['assistant', turn2.output_text],
      ['user', 'after the restart'],
    ]);

    // DELETE, then GET and a continuation are 404.
    await a2.responses.delete(turn1.id);
    expect(await statusOf(a2.responses.retrieve(turn1.id))).toBe(404);
    expect(
      await statusOf(a2.responses.create({ model: MODEL_QWEN, input: 'x', previous_response_id: turn1.id })),
    ).toBe(404);
    await second.stop('SIGTERM');
  });
});
