// Cross-process end to end (issue 31): the official `openai` client → a real edge process → a real `iop-node run`
// process → its ollama and openai_compat (vLLM) adapters → fake inference servers that record what they received.
// Embeddings: the SDK's default base64 and explicit floats, on an Ollama and a vLLM model. Legacy completions
// (`completions.create`, streamed and not): Ollama /api/generate with the raw prompt, vLLM /v1/completions.
// No silent drop: every request field reaches each backend in that backend's own form, or is refused naming it,
// or (on a `drop_unsupported` model) is dropped and named in `x-iop-dropped-params`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import OpenAI, { BadRequestError } from 'openai';
import { fakeEmbedding, fakeEmbeddingTokens, type FakeServer, type RecordedRequest } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import { ProcessGroup, startEdgeProcess, waitUntil, type EdgeProcess } from '../support/e2e-processes.js';
import {
  MODEL_LLAMA,
  MODEL_QWEN,
  OLLAMA_SERVED,
  VLLM_SERVED,
  fabricConfig,
  ollamaProviderId,
} from '../support/fabric-config.js';
import {
  startFabricNode,
  startFakeBackends,
  waitForProvidersReady,
  stopFabric,
} from '../support/fabric-setup.js';

jest.setTimeout(60_000);

/** An Ollama-served model that drops what Ollama cannot take instead of refusing it. */
const MODEL_LENIENT = 'e2e-llama-lenient';
/** An Ollama-served model whose node fetches remote images (with the node's default, public-only address check). */
const MODEL_FETCH = 'e2e-llama-fetch';
/** MODEL_FETCH with a byte budget of two PNG_BYTES images per run (image_limits.max_total_bytes). */
const MODEL_FETCH_SMALL = 'e2e-llama-fetch-small';

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let admin: AdminClient;
let client: OpenAI;
/** Serves PNG_BYTES at /cat.png on 127.0.0.1, the one loopback address the node is allowed to fetch images from. */
let images: http.Server;
let imageBase: string;
let imageRequests = 0;
const PNG_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  images = http.createServer((req, res) => {
    imageRequests += 1;
    if ((req.url ?? '').split('?')[0] === '/cat.png')
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_BYTES);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  const dir = await group.tempDir('iop-e2e-fidelity-');
  const config = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
  });
  (config['models'] as Record<string, unknown>[]).push({
    id: MODEL_LENIENT,
    providers: { [ollamaProviderId('n1')]: OLLAMA_SERVED },
    drop_unsupported: true,
  });
  (config['models'] as Record<string, unknown>[]).push({
    id: MODEL_FETCH,
    providers: { [ollamaProviderId('n1')]: OLLAMA_SERVED },
    fetch_image_urls: true,
  });
  (config['models'] as Record<string, unknown>[]).push({
    id: MODEL_FETCH_SMALL,
    providers: { [ollamaProviderId('n1')]: OLLAMA_SERVED },
    fetch_image_urls: true,
    image_limits: { max_total_bytes: 2 * PNG_BYTES.length },
  });
  edge = await startEdgeProcess(group, dir, config);
  const node = await startFabricNode(group, edge, {
    // The test's allow-list: loopback 127.0.0.1 only (every other private address stays refused).
    args: ['--image-fetch-allow', '127.0.0.1/32'],
  });
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  await waitForProvidersReady(admin, () => `${node.describe()}\n${edge.describe()}`);
  client = new OpenAI({ baseURL: `${edge.addresses.openai}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await stopFabric(group, admin, ollama, vllm);
  if (images) await new Promise<void>((resolve) => images.close(() => resolve()));
});

/** The body of the last request the fake received on `path` since `before`. */
function lastBody(server: FakeServer, path: string, before: number): Record<string, unknown> {
  const seen = server.requests.slice(before).filter((request: RecordedRequest) => request.path === path);
  expect(seen.length).toBeGreaterThan(0);
  return seen[seen.length - 1]?.body as Record<string, unknown>;
}

const schema = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};
const responseFormat = {
  type: 'json_schema' as const,
  json_schema: { name: 'weather', schema, strict: true },
};

describe('image URLs', () => {
  const imagePart = (url: string) => [
    { role: 'user' as const, content: [{ type: 'image_url' as const, image_url: { url } }] },
  ];

  it('reach vLLM unchanged as image_url parts', async () => {
    const before = vllm.requests.length;
    const url = 'https://images.example/cat.png?size=2';
    await client.chat.completions.create({ model: MODEL_QWEN, messages: imagePart(url) });
    const body = lastBody(vllm, '/v1/chat/completions', before);
    expect(body['messages']).toEqual([
      { role: 'user', content: [{ type: 'image_url', image_url: { url } }] },
    ]);
  });

  it('are refused with 400 for an Ollama model without fetch_image_urls, naming model and backend', async () => {
    const before = ollama.requests.length;
    const error = await client.chat.completions
      .create({ model: MODEL_LLAMA, messages: imagePart('https://images.example/cat.png') })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    const bad = error as BadRequestError;
    expect(bad.code).toBe('unsupported_image_url');
    expect(bad.message).toContain(`Model '${MODEL_LLAMA}'`);
    expect(bad.message).toContain('Ollama');
    expect(ollama.requests.slice(before).filter((request) => request.path === '/api/chat')).toHaveLength(0);
  });

  it('with fetch_image_urls the node fetches the image and Ollama receives it as base64', async () => {
    const before = ollama.requests.length;
    await client.chat.completions.create({ model: MODEL_FETCH, messages: imagePart(`${imageBase}/cat.png`) });
    const body = lastBody(ollama, '/api/chat', before);
    expect(body['messages']).toEqual([{ role: 'user', content: '', images: [PNG_BYTES.toString('base64')] }]);
  });

  it('with fetch_image_urls the node refuses a private image host outside its allow-list: image_fetch_failed', async () => {
    const before = ollama.requests.length;
    // 127.0.0.2 is loopback but not on the node's allow-list (127.0.0.1/32): refused before any connection.
    const error = await client.chat.completions
      .create({ model: MODEL_FETCH, messages: imagePart('http://127.0.0.2:9/cat.png') })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const failed = error as InstanceType<typeof OpenAI.APIError>;
    expect(failed.status).toBe(502);
    expect(failed.code).toBe('image_fetch_failed');
    expect(failed.message).toContain('blocked_address');
    // Nothing but the node's loaded-model asks (/api/ps after each run) reached Ollama.
    expect(ollama.requests.slice(before).filter((request) => request.path !== '/api/ps')).toHaveLength(0);
  });
});

describe('image URL limits (issue 43)', () => {
  const imageParts = (urls: string[]) => [
    {
      role: 'user' as const,
      content: urls.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
    },
  ];

  it('64 image URLs to a fetching model: 400 too_many_image_urls before the node fetches anything', async () => {
    const before = { images: imageRequests, ollama: ollama.requests.length };
    const urls = Array.from({ length: 64 }, (_, index) => `${imageBase}/cat.png?n=${index}`);
    const error = await client.chat.completions
      .create({ model: MODEL_FETCH, messages: imageParts(urls) })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).code).toBe('too_many_image_urls');
    expect((error as BadRequestError).message).toContain('at most 16');
    expect(imageRequests).toBe(before.images);
    expect(
      ollama.requests.slice(before.ollama).filter((request) => request.path === '/api/chat'),
    ).toHaveLength(0);
  });

  it("the model's max_total_bytes reaches the node: a run over it fails with image_fetch_failed naming the cap", async () => {
    const before = { images: imageRequests, ollama: ollama.requests.length };
    const urls = [1, 2, 3].map((index) => `${imageBase}/cat.png?n=${index}`);
    const error = await client.chat.completions
      .create({ model: MODEL_FETCH_SMALL, messages: imageParts(urls) })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const failed = error as InstanceType<typeof OpenAI.APIError>;
    expect(failed.status).toBe(502);
    expect(failed.code).toBe('image_fetch_failed');
    expect(failed.message).toContain(`${2 * PNG_BYTES.length} bytes allowed in total`);
    expect(imageRequests - before.images).toBe(3);
    expect(
      ollama.requests.slice(before.ollama).filter((request) => request.path === '/api/chat'),
    ).toHaveLength(0);
  });
});

describe('request fields reach each backend in its own form', () => {
  it('response_format json_schema, seed and stop reach vLLM unchanged', async () => {
    const before = vllm.requests.length;
    await client.chat.completions.create({
      model: MODEL_QWEN,
      messages: [{ role: 'user', content: 'weather' }],
      response_format: responseFormat,
      seed: 1234,
      stop: ['END', 'STOP'],
      presence_penalty: 0.25,
    });
    const body = lastBody(vllm, '/v1/chat/completions', before);
    expect(body['response_format']).toEqual(responseFormat);
    expect(body['seed']).toBe(1234);
    expect(body['stop']).toEqual(['END', 'STOP']);
    expect(body['presence_penalty']).toBe(0.25);
  });

  it('response_format json_schema reaches Ollama as format (the schema); seed and stop as options', async () => {
    const before = ollama.requests.length;
    await client.chat.completions.create({
      model: MODEL_LLAMA,
      messages: [{ role: 'user', content: 'weather' }],
      response_format: responseFormat,
      seed: 1234,
      stop: ['END'],
    });
    const body = lastBody(ollama, '/api/chat', before);
    expect(body['format']).toEqual(schema);
    expect(body['options']).toMatchObject({ seed: 1234, stop: ['END'] });

    const jsonBefore = ollama.requests.length;
    await client.chat.completions.create({
      model: MODEL_LLAMA,
      messages: [{ role: 'user', content: 'weather' }],
      response_format: { type: 'json_object' },
    });
    expect(lastBody(ollama, '/api/chat', jsonBefore)['format']).toBe('json');
  });

  it('passes fields IOP does not know (top_k, guided_json) and logit_bias through to vLLM', async () => {
    const before = vllm.requests.length;
    await client.chat.completions.create({
      model: MODEL_QWEN,
      messages: [{ role: 'user', content: 'hi' }],
      logit_bias: { '50256': -100 },
      user: 'end-user-7',
      // vLLM's extra_body fields, as the SDK sends them: top level.
      ...({ top_k: 20, guided_json: schema } as Record<string, unknown>),
    });
    const body = lastBody(vllm, '/v1/chat/completions', before);
    expect(body).toMatchObject({
      logit_bias: { '50256': -100 },
      user: 'end-user-7',
      top_k: 20,
      guided_json: schema,
      model: VLLM_SERVED,
    });
  });

  it('refuses logit_bias on an Ollama model with 400 naming it, without reaching the backend', async () => {
    const before = ollama.requests.length;
    const error = await client.chat.completions
      .create({
        model: MODEL_LLAMA,
        messages: [{ role: 'user', content: 'hi' }],
        logit_bias: { '42': 5 },
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    const bad = error as BadRequestError;
    expect(bad.code).toBe('unsupported_parameter');
    expect(bad.param).toBe('logit_bias');
    expect(bad.message).toContain('Ollama');
    expect(ollama.requests.slice(before).filter((request) => request.path === '/api/chat')).toHaveLength(0);
  });

  it('drops logit_bias and top_k on a drop_unsupported model and names them in x-iop-dropped-params', async () => {
    const before = ollama.requests.length;
    const { data, response } = await client.chat.completions
      .create({
        model: MODEL_LENIENT,
        messages: [{ role: 'user', content: 'hi' }],
        logit_bias: { '42': 5 },
        seed: 9,
        ...({ top_k: 3 } as Record<string, unknown>),
      })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(response.headers.get('x-iop-dropped-params')).toBe('logit_bias,top_k');
    const body = lastBody(ollama, '/api/chat', before);
    expect(body['options']).toMatchObject({ seed: 9 });
    expect(JSON.stringify(body)).not.toContain('logit_bias');
    expect(JSON.stringify(body)).not.toContain('top_k');
  });

  it('responses: text.format json_schema reaches Ollama as format', async () => {
    const before = ollama.requests.length;
    await client.responses.create({
      model: MODEL_LLAMA,
      input: 'weather',
      text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } },
    });
    expect(lastBody(ollama, '/api/chat', before)['format']).toEqual(schema);
  });
});

describe('POST /v1/completions', () => {
  const prompt = 'once upon a time';

  it.each([
    {
      model: MODEL_LLAMA,
      upstream: () => ollama,
      path: '/api/generate',
      expectBody: (body: Record<string, unknown>) => {
        expect(body).toMatchObject({ prompt, raw: true });
        expect(body['options']).toMatchObject({
          num_predict: 3,
          temperature: 0.5,
          top_p: 0.9,
          seed: 77,
          stop: ['THE END'],
        });
      },
    },
    {
      model: MODEL_QWEN,
      upstream: () => vllm,
      path: '/v1/completions',
      expectBody: (body: Record<string, unknown>) => {
        expect(body).toMatchObject({
          prompt,
          max_tokens: 3,
          temperature: 0.5,
          top_p: 0.9,
          seed: 77,
          stop: ['THE END'],
          user: 'u-1',
        });
        expect(body).not.toHaveProperty('messages');
      },
    },
  ])(
    'completes a raw prompt on $model, whole and streamed',
    async ({ model, upstream, path, expectBody }) => {
      const fields = { temperature: 0.5, top_p: 0.9, seed: 77, stop: ['THE END'], max_tokens: 3 };
      const user = model === MODEL_QWEN ? { user: 'u-1' } : {};
      const before = upstream().requests.length;
      const whole = await client.completions.create({ model, prompt, ...fields, ...user });
      expect(whole.id).toMatch(/^cmpl-/);
      expect(whole.object).toBe('text_completion');
      expect(whole.model).toBe(model);
      expect(whole.choices).toHaveLength(1);
      const [choice] = whole.choices;
      expect(choice?.index).toBe(0);
      expect(choice?.logprobs).toBeNull();
      expect(choice?.finish_reason).toBe('length');
      expect(choice?.text.startsWith('once upon')).toBe(true);
      expect(whole.usage?.completion_tokens).toBe(3);
      expect(whole.usage?.total_tokens).toBe((whole.usage?.prompt_tokens ?? 0) + 3);
      const wholeBody = lastBody(upstream(), path, before);
      expectBody(wholeBody);
      expect(wholeBody['stream']).toBe(false);

      const streamBefore = upstream().requests.length;
      const stream = await client.completions.create({
        model,
        prompt: [prompt],
        ...fields,
        ...user,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      const finishes: (string | null)[] = [];
      let usage: { completion_tokens: number } | undefined;
      for await (const chunk of stream) {
        expect(chunk.object).toBe('text_completion');
        expect(chunk.id).toMatch(/^cmpl-/);
        for (const entry of chunk.choices) {
          text += entry.text;
          finishes.push(entry.finish_reason);
        }
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe(choice?.text);
      expect(finishes[finishes.length - 1]).toBe('length');
      expect(usage?.completion_tokens).toBe(3);
      const streamBody = lastBody(upstream(), path, streamBefore);
      expectBody(streamBody);
      expect(streamBody['stream']).toBe(true);
    },
  );

  it('refuses what a backend cannot do: several prompts, token ids, n > 1, echo and suffix on Ollama, logprobs', async () => {
    const refused = async (body: Record<string, unknown>): Promise<BadRequestError> => {
      const error = await client.completions
        .create(body as unknown as OpenAI.CompletionCreateParamsNonStreaming)
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BadRequestError);
      return error as BadRequestError;
    };
    expect((await refused({ model: MODEL_QWEN, prompt: ['a', 'b'] })).param).toBe('prompt');
    expect((await refused({ model: MODEL_QWEN, prompt: [1, 2, 3] })).param).toBe('prompt');
    expect((await refused({ model: MODEL_QWEN, prompt: 'a', n: 2 })).param).toBe('n');
    expect((await refused({ model: MODEL_QWEN, prompt: 'a', logprobs: 2 })).param).toBe('logprobs');
    const echo = await refused({ model: MODEL_LLAMA, prompt: 'a', echo: true });
    expect(echo.param).toBe('echo');
    expect(echo.code).toBe('unsupported_parameter');
    expect((await refused({ model: MODEL_LLAMA, prompt: 'a', suffix: 'z' })).param).toBe('suffix');
    expect((await refused({ model: MODEL_LLAMA, prompt: 'a', logit_bias: { '1': 2 } })).param).toBe(
      'logit_bias',
    );
  });

  it('forwards echo and suffix to vLLM and answers 404 for an unknown model', async () => {
    const before = vllm.requests.length;
    await client.completions.create({ model: MODEL_QWEN, prompt: 'a b', echo: true, suffix: 'z' });
    expect(lastBody(vllm, '/v1/completions', before)).toMatchObject({ echo: true, suffix: 'z' });
    const missing = await client.completions
      .create({ model: 'no-such-model', prompt: 'x' })
      .catch((caught: unknown) => caught as { status?: number });
    expect((missing as { status?: number }).status).toBe(404);
  });
});

describe('POST /v1/embeddings', () => {
  const inputs = ['the quick brown fox', 'jumps over'];
  const expected = inputs.map((input) => fakeEmbedding(input));
  const tokens = inputs.reduce((sum, input) => sum + fakeEmbeddingTokens(input), 0);

  it.each([
    { model: MODEL_LLAMA, upstream: () => ollama, path: '/api/embed', served: OLLAMA_SERVED },
    { model: MODEL_QWEN, upstream: () => vllm, path: '/v1/embeddings', served: VLLM_SERVED },
  ])(
    'embeds two inputs on $model, base64 by default and floats on request',
    async ({ model, upstream, path, served }) => {
      const before = upstream().requests.length;
      // The SDK asks for base64 and decodes it to numbers.
      const encoded = await client.embeddings.create({ model, input: inputs });
      expect(encoded.object).toBe('list');
      expect(encoded.model).toBe(model);
      expect(encoded.data.map((entry) => entry.index)).toEqual([0, 1]);
      expect(encoded.data.map((entry) => entry.embedding)).toEqual(expected);
      expect(encoded.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });

      const { data: floats, response } = await client.embeddings
        .create({ model, input: inputs, encoding_format: 'float' })
        .withResponse();
      expect(floats.data.map((entry) => entry.embedding)).toEqual(expected);
      expect(response.headers.get('x-iop-run-id')).toBeTruthy();

      const body = lastBody(upstream(), path, before);
      expect(body).toMatchObject({ model: served, input: inputs });
    },
  );

  it.each([
    { model: MODEL_LLAMA, upstream: () => ollama, path: '/api/embed' },
    { model: MODEL_QWEN, upstream: () => vllm, path: '/v1/embeddings' },
  ])('passes dimensions to $model', async ({ model, upstream, path }) => {
    const before = upstream().requests.length;
    const answer = await client.embeddings.create({
      model,
      input: 'short',
      dimensions: 4,
      encoding_format: 'float',
    });
    expect(answer.data[0]?.embedding).toEqual(fakeEmbedding('short', 4));
    expect(lastBody(upstream(), path, before)['dimensions']).toBe(4);
  });

  it('refuses token-array input with 400 and an unknown model with 404', async () => {
    const tokensError = await client.embeddings
      .create({ model: MODEL_QWEN, input: [[1, 2, 3]] })
      .catch((caught: unknown) => caught);
    expect(tokensError).toBeInstanceOf(BadRequestError);
    expect((tokensError as BadRequestError).param).toBe('input');
    const missing = await client.embeddings
      .create({ model: 'no-such-model', input: 'x' })
      .catch((caught: unknown) => caught as { status?: number });
    expect((missing as { status?: number }).status).toBe(404);
  });

  it('leaves the providers idle afterwards', async () => {
    await waitUntil(
      async () => (await admin.listProviders()).every((entry) => entry.inFlight === 0 && entry.queued === 0),
      5_000,
      () => 'providers idle',
    );
  });
});
