// Stored conversations through the OpenAI app with the official SDK: `store` (default true) keeps a response,
// `previous_response_id` prepends the stored chain to what the backend receives (plain, streamed, background),
// another key or an unknown id is a 404, and GET / DELETE / input_items answer from the stored items.
import { afterEach, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import { echoScripter } from '../test-support/fake-edge-service.js';
import { MemoryResponseStore } from './memory-response-store.js';
import { createOpenAIApp } from './openai-app.js';
import { serveHarnessApp } from './test-support/openai-harness.js';
import {
  eventually,
  harnessFabric,
  type ServedListener as ServedApp,
} from '../surface-kit/test-support/surface-harness.js';
import type { FakeEdgeService } from '../test-support/fake-edge-service.js';

const KEY_A = 'sk-team-a';
const KEY_B = 'sk-team-b';

interface Started {
  a: OpenAI;
  b: OpenAI;
  url: string;
  service: FakeEdgeService;
  store: MemoryResponseStore;
  clock: ManualClock;
}

let served: ServedApp | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function start(): Promise<Started> {
  const fabric = harnessFabric({ openai: `  api_keys: ['${KEY_A}', '${KEY_B}']`, scripter: echoScripter });
  const clock = new ManualClock(Date.now());
  const store = new MemoryResponseStore({ ttlMs: 60_000, maxPerKey: 100, clock });
  const app = createOpenAIApp({
    config: fabric.config,
    service: fabric.service,
    logger: silentLogger,
    responseStore: store,
  });
  served = await serveHarnessApp(app, fabric.pool);
  const client = (apiKey: string) =>
    new OpenAI({ baseURL: `${served?.url}/v1`, apiKey, maxRetries: 0, timeout: 10_000 });
  return { a: client(KEY_A), b: client(KEY_B), url: served.url, service: fabric.service, store, clock };
}

const conversation = (service: FakeEdgeService, index: number) =>
  service.submitted[index]?.messages.map((message) => [message.role, message.content]);

async function statusOf(promise: Promise<unknown>): Promise<{ status?: number; code?: unknown }> {
  try {
    await promise;
    return {};
  } catch (error) {
    const failure = error as { status?: number; code?: unknown };
    return { status: failure.status, code: failure.code };
  }
}

describe('stored conversations', () => {
  it('continues a stored response: the backend receives the earlier turns before the new input', async () => {
    const { a, service } = await start();
    const first = await a.responses.create({ model: 'pooled', input: 'hello', instructions: 'be brief' });
    expect(first).toMatchObject({ store: true, previous_response_id: null });
    const second = await a.responses.create({
      model: 'pooled',
      input: [{ role: 'user', content: 'again' }],
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(conversation(service, 1)).toEqual([
      ['user', 'hello'],
      ['assistant', 'echo: hello'],
      ['user', 'again'],
    ]);
    // The chain: a third turn receives both earlier turns, in order.
    await a.responses.create({ model: 'pooled', input: 'third', previous_response_id: second.id });
    expect(conversation(service, 2)).toEqual([
      ['user', 'hello'],
      ['assistant', 'echo: hello'],
      ['user', 'again'],
      ['assistant', 'echo: again'],
      ['user', 'third'],
    ]);
  });

  it('stores and continues streamed and background responses', async () => {
    const { a, service } = await start();
    const stream = a.responses.stream({ model: 'pooled', input: 'streamed' });
    const first = await stream.finalResponse();
    const queued = await a.responses.create({
      model: 'pooled',
      input: 'in the background',
      previous_response_id: first.id,
      background: true,
    });
    await eventually(async () => expect((await a.responses.retrieve(queued.id)).status).toBe('completed'));
    const third = a.responses.stream({ model: 'pooled', input: 'last', previous_response_id: queued.id });
    await third.finalResponse();
    expect(conversation(service, 2)).toEqual([
      ['user', 'streamed'],
      ['assistant', 'echo: streamed'],
      ['user', 'in the background'],
      ['assistant', 'echo: in the background'],
      ['user', 'last'],
    ]);
  });

  it("answers another key's id and an unknown or expired one with 404 previous_response_not_found", async () => {
    const { a, b, clock } = await start();
    const first = await a.responses.create({ model: 'pooled', input: 'mine' });
    const notFound = { status: 404, code: 'previous_response_not_found' };
    expect(
      await statusOf(b.responses.create({ model: 'pooled', input: 'x', previous_response_id: first.id })),
    ).toEqual(notFound);
    expect(
      await statusOf(a.responses.create({ model: 'pooled', input: 'x', previous_response_id: 'resp_none' })),
    ).toEqual(notFound);
    expect(await statusOf(b.responses.retrieve(first.id))).toEqual({
      status: 404,
      code: 'response_not_found',
    });
    expect(
      await statusOf(a.responses.create({ model: 'pooled', input: 'x', previous_response_id: first.id })),
    ).toEqual({});
    // The store's clock passes the TTL (60 s) of a record made at the app's (system) time.
    clock.advance(120_000);
    expect(
      await statusOf(a.responses.create({ model: 'pooled', input: 'x', previous_response_id: first.id })),
    ).toEqual(notFound);
  });

  it('keeps nothing with store: false, and nothing for a failed response', async () => {
    const { a, service, store } = await start();
    const unstored = await a.responses.create({ model: 'pooled', input: 'forget me', store: false });
    expect((unstored as unknown as { store: unknown }).store).toBe(false);
    expect(await statusOf(a.responses.retrieve(unstored.id))).toEqual({
      status: 404,
      code: 'response_not_found',
    });
    service.scripter = () => ({
      parts: [{ type: 'error', code: 'backend_error', message: 'boom', retryable: false, backendMs: 0 }],
    });
    await statusOf(a.responses.create({ model: 'pooled', input: 'fails' }));
    expect(store.writes).toBe(0);
  });

  it('returns a stored response by id, lists its input items, and deletes it', async () => {
    const { a, b } = await start();
    const response = await a.responses.create({
      model: 'pooled',
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: [{ type: 'input_text', text: 'two' }] },
        { role: 'user', content: 'three' },
      ],
    });
    expect(await a.responses.retrieve(response.id)).toEqual(response);

    const all = await a.responses.inputItems.list(response.id, { order: 'asc' });
    const texts = all.data.map((item) => (item.type === 'message' ? item.content[0] : undefined));
    expect(texts).toEqual([
      { type: 'input_text', text: 'one' },
      { type: 'input_text', text: 'two' },
      { type: 'input_text', text: 'three' },
    ]);
    expect(all.data.every((item) => typeof item.id === 'string' && item.id.startsWith('msg_'))).toBe(true);
    const page = await a.responses.inputItems.list(response.id, { limit: 2 });
    expect(page.data.map((item) => item.id)).toEqual([all.data[2]?.id, all.data[1]?.id]);
    expect(page.has_more).toBe(true);
    const rest = await a.responses.inputItems.list(response.id, { limit: 2, after: all.data[1]?.id });
    expect(rest.data.map((item) => item.id)).toEqual([all.data[0]?.id]);
    expect(rest.has_more).toBe(false);
    expect(await statusOf(b.responses.inputItems.list(response.id))).toMatchObject({ status: 404 });

    expect(await statusOf(b.responses.delete(response.id))).toMatchObject({ status: 404 });
    const deleted = await fetch(`${served?.url}/v1/responses/${response.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(await deleted.json()).toEqual({ id: response.id, object: 'response.deleted', deleted: true });
    expect(await statusOf(a.responses.retrieve(response.id))).toMatchObject({ status: 404 });
    expect(await statusOf(a.responses.delete(response.id))).toMatchObject({ status: 404 });
    expect(
      await statusOf(a.responses.create({ model: 'pooled', input: 'x', previous_response_id: response.id })),
    ).toEqual({ status: 404, code: 'previous_response_not_found' });
  });

  it('deletes a background response and its stored conversation together', async () => {
    const { a } = await start();
    const queued = await a.responses.create({ model: 'pooled', input: 'bg', background: true });
    await eventually(async () => expect((await a.responses.retrieve(queued.id)).status).toBe('completed'));
    await a.responses.delete(queued.id);
    expect(await statusOf(a.responses.retrieve(queued.id))).toMatchObject({ status: 404 });
  });

  it('refuses a bad input_items query with 400', async () => {
    const { a, url } = await start();
    const response = await a.responses.create({ model: 'pooled', input: 'q' });
    for (const query of ['limit=0', 'limit=101', 'order=up', 'after=msg_unknown']) {
      const answer = await fetch(`${url}/v1/responses/${response.id}/input_items?${query}`, {
        headers: { authorization: `Bearer ${KEY_A}` },
      });
      expect(answer.status).toBe(400);
    }
  });
});
