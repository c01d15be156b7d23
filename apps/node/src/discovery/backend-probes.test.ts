import { describe, expect, it } from '@jest/globals';
import { ollamaBaseUrl, openAICompatBaseUrl, probeOllama, probeOpenAICompat } from './backend-probes.js';
import type { HttpClient } from '../adapters/http/http-client.js';
import { fakeProbeDeps } from './test-support/fake-probe-deps.js';

const OLLAMA = 'http://127.0.0.1:11434';

// Shapes as the servers send them (fields the probes ignore trimmed).
const OLLAMA_TAGS = {
  models: [
    { name: 'qwen3:8b', model: 'qwen3:8b', size: 5225388164, digest: 'a1b2', details: { family: 'qwen3' } },
    {
      name: 'llama3.2:3b',
      model: 'llama3.2:3b',
      size: 2019393189,
      digest: 'c3d4',
      details: { family: 'llama' },
    },
  ],
};
const OLLAMA_PS = { models: [{ name: 'qwen3:8b', model: 'qwen3:8b', expires_at: '2026-12-01T05:00:00Z' }] };

function vllmModels(id: string, ownedBy = 'vllm'): unknown {
  return {
    object: 'list',
    data: [{ id, object: 'model', created: 1764560000, owned_by: ownedBy, root: id }],
  };
}

function probeOptions(http: HttpClient) {
  return { http, timeoutMs: 500, signal: new AbortController().signal };
}

describe('ollamaBaseUrl', () => {
  it.each([
    [undefined, 'http://127.0.0.1:11434'],
    ['', 'http://127.0.0.1:11434'],
    ['0.0.0.0:11434', 'http://127.0.0.1:11434'],
    ['127.0.0.1:31434', 'http://127.0.0.1:31434'],
    [':9999', 'http://127.0.0.1:9999'],
    ['gpu-box', 'http://gpu-box:11434'],
    ['http://localhost:11434/', 'http://localhost:11434'],
    ['https://ollama.internal', 'https://ollama.internal'],
  ])('reads OLLAMA_HOST %p as %p', (value, expected) => {
    expect(ollamaBaseUrl(value)).toBe(expected);
  });

  it('throws on a value that is not an address', () => {
    expect(() => ollamaBaseUrl('http://[bad')).toThrow();
  });
});

describe('openAICompatBaseUrl', () => {
  it.each([
    ['http://127.0.0.1:8000', 'http://127.0.0.1:8000/v1'],
    ['http://127.0.0.1:8000/', 'http://127.0.0.1:8000/v1'],
    ['http://127.0.0.1:8000/v1/', 'http://127.0.0.1:8000/v1'],
    ['http://gpu:9000/proxy', 'http://gpu:9000/proxy/v1'],
  ])('normalizes %p to %p', (value, expected) => {
    expect(openAICompatBaseUrl(value)).toBe(expected);
  });
});

describe('probeOllama', () => {
  it('lists the served models, the version and what is loaded', async () => {
    const deps = fakeProbeDeps({
      http: {
        [`${OLLAMA}/api/version`]: { version: '0.12.6' },
        [`${OLLAMA}/api/tags`]: OLLAMA_TAGS,
        [`${OLLAMA}/api/ps`]: OLLAMA_PS,
      },
    });
    await expect(probeOllama(OLLAMA, probeOptions(deps.http))).resolves.toEqual({
      kind: 'ollama',
      baseUrl: OLLAMA,
      models: ['llama3.2:3b', 'qwen3:8b'],
      version: '0.12.6',
      loadedModels: ['qwen3:8b'],
    });
  });

  it('finds nothing when the port is closed or answers something that is not Ollama', async () => {
    expect(await probeOllama(OLLAMA, probeOptions(fakeProbeDeps().http))).toBeUndefined();
    const other = fakeProbeDeps({ http: { [`${OLLAMA}/api/tags`]: { status: 404, body: 'not found' } } });
    expect(await probeOllama(OLLAMA, probeOptions(other.http))).toBeUndefined();
  });
});

describe('probeOpenAICompat', () => {
  const base = 'http://127.0.0.1:8000/v1';

  it('recognizes vLLM by owned_by and reads /version', async () => {
    const deps = fakeProbeDeps({
      http: {
        [`${base}/models`]: vllmModels('Qwen/Qwen3-8B'),
        'http://127.0.0.1:8000/version': { version: '0.11.0' },
      },
    });
    await expect(probeOpenAICompat(base, probeOptions(deps.http))).resolves.toEqual({
      kind: 'vllm',
      baseUrl: base,
      models: ['Qwen/Qwen3-8B'],
      version: '0.11.0',
      loadedModels: [],
    });
  });

  it.each([
    ['llamacpp', 'llama.cpp'],
    ['sglang', 'sglang'],
    ['organization_owner', 'lmstudio'],
  ])('maps owned_by %p to kind %p', async (owner, kind) => {
    const deps = fakeProbeDeps({ http: { [`${base}/models`]: vllmModels('m', owner) } });
    expect((await probeOpenAICompat(base, probeOptions(deps.http)))?.kind).toBe(kind);
  });

  it('tells llama.cpp by /health when owned_by says nothing, else falls back to the port, else openai_compat', async () => {
    const llama = fakeProbeDeps({
      http: {
        'http://127.0.0.1:9000/v1/models': vllmModels('m.gguf', 'me'),
        'http://127.0.0.1:9000/health': { status: 'ok' },
      },
    });
    const options = probeOptions(llama.http);
    expect((await probeOpenAICompat('http://127.0.0.1:9000/v1', options))?.kind).toBe('llama.cpp');

    const lmstudio = fakeProbeDeps({ http: { 'http://127.0.0.1:1234/v1/models': vllmModels('m', 'me') } });
    const hinted = await probeOpenAICompat('http://127.0.0.1:1234/v1', {
      ...probeOptions(lmstudio.http),
      portHint: 1234,
    });
    expect(hinted?.kind).toBe('lmstudio');

    const plain = fakeProbeDeps({ http: { 'http://10.0.0.5:7000/v1/models': vllmModels('m', 'me') } });
    expect((await probeOpenAICompat('http://10.0.0.5:7000/v1', probeOptions(plain.http)))?.kind).toBe(
      'openai_compat',
    );
  });

  it('finds nothing when /v1/models is missing or malformed', async () => {
    const deps = fakeProbeDeps({ http: { [`${base}/models`]: { models: [] } } });
    expect(await probeOpenAICompat(base, probeOptions(deps.http))).toBeUndefined();
    expect(await probeOpenAICompat(base, probeOptions(fakeProbeDeps().http))).toBeUndefined();
  });
});
