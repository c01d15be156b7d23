// The CLI adapter's side of `fabric_model` runs (issue 42): it asks the node for the run's model endpoint, fills
// the placeholders in the one-shot process's args and env, and closes the endpoint when the run ends. The
// endpoint here is a fake pointing at a tiny OpenAI-style server; the real one is model-endpoint/.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { ModelAccess } from '@iop/wire';
import type { Adapter } from '../adapter.js';
import type { ModelEndpointRequest, ModelEndpoints } from '../model-endpoint.js';
import { cliInstance, collect, request, terminal, testAdapter, texts } from './test-support/cli-test-kit.js';

const agentProfile = {
  command: 'bin/iop-fake-cli',
  mode: 'oneshot',
  args: ['--model-calls', '2'],
  env: { IOP_MODEL_BASE_URL: '{model_base_url}', IOP_MODEL_API_KEY: '{model_api_key}', IOP_MODEL: '{model}' },
};

let adapter: Adapter | undefined;
let server: http.Server | undefined;
afterEach(async () => {
  await adapter?.close();
  adapter = undefined;
  server?.close();
  server = undefined;
});

/** A chat-completions server that answers with the model and key it was called with. */
async function modelServer(): Promise<string> {
  server = http.createServer((incoming, response) => {
    let body = '';
    incoming.on('data', (chunk: Buffer) => (body += chunk.toString()));
    incoming.on('end', () => {
      const { model, stream } = JSON.parse(body) as { model: string; stream: boolean };
      const text = `${model} ${incoming.headers.authorization ?? ''}`;
      if (stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(
          `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\ndata: [DONE]\n\n`,
        );
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ choices: [{ message: { content: text } }] }));
      }
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

class FakeEndpoints implements ModelEndpoints {
  readonly opened: ModelEndpointRequest[] = [];
  closed = 0;
  constructor(private readonly base: string) {}

  open(opened: ModelEndpointRequest) {
    this.opened.push(opened);
    return Promise.resolve({
      values: {
        modelBaseUrl: `${this.base}/v1`,
        anthropicBaseUrl: this.base,
        apiKey: opened.apiKey,
        model: opened.model,
      },
      close: () => {
        this.closed += 1;
      },
    });
  }
}

const access: ModelAccess = { apiKey: 'iop-run-secret', model: 'local' };

describe('cli adapter runs with model access', () => {
  it('opens the run’s endpoint, gives the agent its values through env, and closes it at the end', async () => {
    const endpoints = new FakeEndpoints(await modelServer());
    adapter = testAdapter(cliInstance({ fab: agentProfile }), { modelEndpoints: endpoints });
    const run = request('fab', 'hello', { modelAccess: access });
    const parts = await collect(adapter, run);
    expect(terminal(parts)).toMatchObject({ type: 'complete' });
    expect(texts(parts)).toContain('MODEL_CALL 1 200 local Bearer iop-run-secret');
    expect(texts(parts)).toContain('MODEL_CALL 2 200 local Bearer iop-run-secret');
    expect(endpoints.opened).toEqual([{ runId: run.runId, apiKey: 'iop-run-secret', model: 'local' }]);
    expect(endpoints.closed).toBe(1);
  });

  it('opens no endpoint for a run without model access (placeholders stay as written)', async () => {
    const endpoints = new FakeEndpoints('http://127.0.0.1:9');
    adapter = testAdapter(cliInstance({ fab: agentProfile }), { modelEndpoints: endpoints });
    const parts = await collect(adapter, request('fab', 'hello'));
    expect(texts(parts)).toContain('MODEL_ENDPOINT {model_base_url} {model_api_key}');
    expect(endpoints.opened).toEqual([]);
  });

  it('refuses model access for a persistent profile, and fails when the node offers no endpoint', async () => {
    const endpoints = new FakeEndpoints('http://127.0.0.1:9');
    adapter = testAdapter(
      cliInstance({
        fab: agentProfile,
        kept: { command: 'bin/iop-fake-cli', mode: 'persistent', persistent: true },
      }),
      { modelEndpoints: endpoints },
    );
    expect(terminal(await collect(adapter, request('kept', 'hi', { modelAccess: access })))).toMatchObject({
      type: 'error',
      code: 'invalid_profile',
    });
    expect(endpoints.opened).toEqual([]);
    await adapter.close();
    adapter = testAdapter(cliInstance({ fab: agentProfile }));
    expect(terminal(await collect(adapter, request('fab', 'hi', { modelAccess: access })))).toMatchObject({
      type: 'error',
      code: 'model_endpoint_unavailable',
      retryable: true,
    });
  });
});
