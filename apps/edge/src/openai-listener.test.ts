// The OpenAI listener as `serve` builds it (surfaces.ts): the OpenAI app with the Anthropic routes mounted. Each
// surface's own tests serve it alone; these cover what only the two together do: the mount takes its routes and
// leaves the rest to the OpenAI app, and agents' model calls on both APIs — a request on a model-call connection
// authenticates with its run's secret only and runs as the parent's principal, as its child; a network
// connection never accepts a run secret. Model-call connections are simulated by marking the server side of real
// loopback connections.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from './logging.js';
import { createRunSecrets } from './governance/run-secrets.js';
import { markModelCall } from './http/model-call-socket.js';
import { createModelCallAuthenticator } from './service/model-call-auth.js';
import { createOpenAIApp, closeOpenAIApp } from './openai/openai-app.js';
import { serveHarnessApp } from './openai/test-support/openai-harness.js';
import { harnessFabric, post } from './surface-kit/test-support/surface-harness.js';
import { textRun, type FakeRun } from './test-support/fake-edge-service.js';
import { createAnthropicRoutes } from './anthropic/anthropic-routes.js';

interface Served {
  url: string;
  close(): Promise<void>;
}

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function start() {
  const fabric = harnessFabric({
    openai: "  api_keys: [{ id: agent-owner, key: 'sk-owner' }]",
    // A run submitted without a parent is the agent run: it lives until cancelled. Children answer at once.
    scripter: (input) => (input.parent ? { parts: textRun(['from the pool']) } : { parts: [] }),
  });
  const { config, service, pool } = fabric;
  const secrets = createRunSecrets();
  const modelCalls = createModelCallAuthenticator({ secrets, service });
  const app = createOpenAIApp({
    config,
    service,
    logger: silentLogger,
    modelCalls,
    mounts: [createAnthropicRoutes({ config, service, logger: silentLogger, modelCalls })],
  });
  /** Parent run id the next accepted connection is a model call of (undefined = a network connection). */
  let nextCall: { parentRunId: string; nodeId: string } | undefined;
  const server = http.createServer(app);
  server.on('connection', (socket) => {
    if (nextCall) markModelCall(socket, nextCall);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  served = {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        closeOpenAIApp(app);
        pool.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  // The agent run, as the parent's API key submitted it.
  // Its answer has no head until its first output: not awaited here.
  const owner = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-owner', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'pooled', stream: true, messages: [{ role: 'user', content: 'agent' }] }),
  });
  while (service.runs.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const parent: FakeRun | undefined = service.runs[0];
  if (!parent) throw new Error('no agent run');
  const call = { parentRunId: parent.runId, nodeId: parent.nodeId };
  return {
    service,
    parent,
    secret: secrets.issue(parent.runId),
    /** POSTs on a fresh connection; `asCall` makes it a model call of the parent. */
    async post(path: string, headers: Record<string, string>, body: unknown, asCall = true) {
      nextCall = asCall ? call : undefined;
      return new Promise<{ status: number; body: string }>((resolve, reject) => {
        const text = JSON.stringify(body);
        const request = http.request(
          `${url}${path}`,
          {
            method: 'POST',
            agent: false,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(text),
              ...headers,
            },
          },
          (response) => {
            let answer = '';
            response.on('data', (chunk: Buffer) => (answer += chunk.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body: answer }));
          },
        );
        request.on('error', reject);
        request.end(text);
      });
    },
    async endParent() {
      parent.emit({ type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
      await (await owner).text();
    },
  };
}

const chat = { model: 'pooled', messages: [{ role: 'user', content: 'hi' }] };
const anthropicMessage = { model: 'pooled', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('model calls on the OpenAI listener', () => {
  it('runs an OpenAI request with the run secret as a child of the parent, under its principal', async () => {
    const harness = await start();
    const answer = await harness.post(
      '/v1/chat/completions',
      { authorization: `Bearer ${harness.secret}` },
      chat,
    );
    expect(answer.status).toBe(200);
    expect(
      (JSON.parse(answer.body) as { choices: { message: { content: string } }[] }).choices[0]?.message
        .content,
    ).toBe('from the pool');
    const child = harness.service.submitted[1];
    expect(child?.parent).toEqual({ runId: harness.parent.runId, nodeId: harness.parent.nodeId });
    expect(child?.principal?.id).toBe('agent-owner');
    await harness.endParent();
  });

  it('takes the run secret as x-api-key on the Anthropic Messages API', async () => {
    const harness = await start();
    const answer = await harness.post(
      '/v1/messages',
      { 'x-api-key': harness.secret, 'anthropic-version': '2023-06-01' },
      anthropicMessage,
    );
    expect(answer.status).toBe(200);
    expect((JSON.parse(answer.body) as { content: { text: string }[] }).content[0]?.text).toBe(
      'from the pool',
    );
    expect(harness.service.submitted[1]?.parent?.runId).toBe(harness.parent.runId);
    await harness.endParent();
  });

  it('refuses an API key on a model call, and a run secret on a network connection', async () => {
    const harness = await start();
    const withKey = await harness.post('/v1/chat/completions', { authorization: 'Bearer sk-owner' }, chat);
    expect(withKey.status).toBe(401);
    const anthropicWithKey = await harness.post(
      '/v1/messages',
      { 'x-api-key': 'sk-owner', 'anthropic-version': '2023-06-01' },
      anthropicMessage,
    );
    expect(anthropicWithKey.status).toBe(401);
    const secretFromNetwork = await harness.post(
      '/v1/chat/completions',
      { authorization: `Bearer ${harness.secret}` },
      chat,
      false,
    );
    expect(secretFromNetwork.status).toBe(401);
    const missing = await harness.post('/v1/chat/completions', {}, chat);
    expect(missing.status).toBe(401);
    expect(harness.service.submitted).toHaveLength(1);
    await harness.endParent();
  });

  it('refuses the secret of another run and the secret of a run that ended', async () => {
    const harness = await start();
    const other = createRunSecrets().issue(harness.parent.runId);
    expect(
      (await harness.post('/v1/chat/completions', { authorization: `Bearer ${other}` }, chat)).status,
    ).toBe(401);
    await harness.endParent();
    const afterEnd = await harness.post(
      '/v1/chat/completions',
      { authorization: `Bearer ${harness.secret}` },
      chat,
    );
    expect(afterEnd.status).toBe(401);
    expect(afterEnd.body).toContain('its run has ended');
  });
});

describe('the Anthropic mount on the OpenAI listener', () => {
  it('takes its routes and the Anthropic catalogue; the OpenAI app answers the rest', async () => {
    const { config, service, pool } = harnessFabric({ openai: "  api_keys: ['sk-one']" });
    const app = createOpenAIApp({
      config,
      service,
      logger: silentLogger,
      mounts: [createAnthropicRoutes({ config, service, logger: silentLogger })],
    });
    served = await serveHarnessApp(app, pool);
    const { url } = served;
    const models = async (headers: Record<string, string>) =>
      (await (await fetch(`${url}/v1/models`, { headers })).json()) as {
        object?: string;
        data: { type?: string }[];
      };
    expect((await models({ authorization: 'Bearer sk-one' })).object).toBe('list');
    const anthropic = await models({ 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-one' });
    expect(anthropic.object).toBeUndefined();
    expect(anthropic.data[0]?.type).toBe('model');
    const viaOpenAI = await post(url, '/v1/chat/completions', chat, { authorization: 'Bearer sk-one' });
    expect(viaOpenAI.json()).toMatchObject({ object: 'chat.completion' });
    const viaAnthropic = await post(url, '/v1/messages', anthropicMessage, {
      'x-api-key': 'sk-one',
      'anthropic-version': '2023-06-01',
    });
    expect(viaAnthropic.json()).toMatchObject({ type: 'message' });
  });
});
