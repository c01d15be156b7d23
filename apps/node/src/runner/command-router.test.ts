import { systemClock } from '@iop/clock';
import { describe, expect, it } from '@jest/globals';
import { create, type NodeCommandRequest, type ProviderConfig } from '@iop/wire';
import { AdapterRegistry } from '../adapters/registry.js';
import { silentLogger } from '@iop/logging';
import { CommandRouter, type LinkStatus } from './command-router.js';
import { adapterInstance, fakeFactory } from './test-support/fake-adapter.js';
import { RecordingOutbound } from './test-support/recording-outbound.js';

function provider(id: string, adapter: string): ProviderConfig {
  return {
    id,
    type: 'ollama',
    category: 'local',
    adapter,
    models: [],
    capacity: 1,
    enabled: true,
    lifecycleCapabilities: ['pull_model'],
  };
}

function setup() {
  const cli = fakeFactory('cli');
  const ollama = fakeFactory('ollama');
  const registry = new AdapterRegistry({
    factories: { cli, ollama },
    adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
    logger: silentLogger,
  });
  registry.apply([
    adapterInstance('cli', 'cli'),
    adapterInstance('ollama-a', 'ollama'),
    adapterInstance('ollama-b', 'ollama'),
  ]);
  const outbound = new RecordingOutbound();
  let status: LinkStatus = { nodeId: 'test-node', connected: true, state: 'connected' };
  const router = new CommandRouter({
    adapters: registry,
    outbound,
    logger: silentLogger,
    maxConcurrency: () => 4,
    providers: () => [provider('gpu-b', 'ollama-b')],
    linkStatus: () => status,
  });
  return { router, outbound, cli, ollama, setStatus: (next: LinkStatus) => (status = next) };
}

const command = (fields: Partial<NodeCommandRequest>) =>
  create.nodeCommandRequest({ adapter: 'cli', target: 'fake-cli', sessionId: 'default', ...fields });

describe('CommandRouter', () => {
  it('answers transport itself, in the seed transcript shape', async () => {
    const { router, cli } = setup();
    const response = await router.handle('r1', command({ command: 'transport' }));
    expect(response.ok).toBe(true);
    expect(response.result).toEqual({
      adapter: 'cli',
      connected: 'true',
      node_id: 'test-node',
      session_id: 'default',
      state: 'connected',
      target: 'fake-cli',
    });
    expect(cli.built[0].commands).toEqual([]);
  });

  it("merges max_concurrency into the adapter's capabilities", async () => {
    const { router } = setup();
    const response = await router.handle('r1', command({ command: 'capabilities' }));
    expect(response).toMatchObject({
      ok: true,
      result: { adapter: 'cli', targets: 'fake-cli', max_concurrency: '4' },
    });
  });

  it('passes other commands to the named adapter and returns its answer', async () => {
    const { router, cli } = setup();
    const response = await router.handle('r1', command({ command: 'status' }));
    expect(response).toMatchObject({ ok: false, error: 'unsupported command status' });
    expect(cli.built[0].commands.map((request) => request.command)).toEqual(['status']);
  });

  it('routes lifecycle commands by provider_id and relays progress under the request id', async () => {
    const { router, ollama, outbound } = setup();
    const target = ollama.built[1];
    target.onCommand = (request, options) => {
      options.onProgress?.({
        providerId: request.providerId,
        model: 'llama3',
        status: 'pulling',
        digest: 'd',
        total: 10,
        completed: 5,
      });
      options.onProgress?.({
        providerId: request.providerId,
        model: 'llama3',
        status: 'success',
        digest: '',
        total: 0,
        completed: 0,
      });
      return Promise.resolve(create.nodeCommandResponse({ ok: true, result: { status: 'success' } }));
    };
    const response = await router.handle(
      'pull-7',
      command({ command: 'pull_model', adapter: '', providerId: 'gpu-b' }),
    );
    expect(response).toMatchObject({ ok: true, result: { status: 'success' } });
    expect(ollama.built[0].commands).toEqual([]);
    const progress = outbound.sent.filter((message) => message.msg?.$case === 'providerLifecycleProgress');
    expect(progress.map((message) => message.requestId)).toEqual(['pull-7', 'pull-7']);
    expect(progress[0].msg).toMatchObject({
      providerLifecycleProgress: { status: 'pulling', completed: 5, total: 10 },
    });
  });

  it("refuses a lifecycle command the provider's lifecycle_capabilities do not list, without touching the adapter", async () => {
    const { router, ollama } = setup();
    for (const name of ['list_models', 'load_model', 'unload_model']) {
      expect(await router.handle('r', command({ command: name, adapter: '', providerId: 'gpu-b' }))).toEqual(
        create.nodeCommandResponse({
          ok: false,
          error: `provider 'gpu-b' does not accept '${name}' (lifecycle_capabilities: pull_model)`,
        }),
      );
    }
    expect(ollama.built.every((adapter) => adapter.commands.length === 0)).toBe(true);
  });

  it('answers ok=false with a clear error for an unknown adapter, ambiguous type or unknown provider', async () => {
    const { router } = setup();
    expect(await router.handle('r', command({ command: 'sessions', adapter: 'nope' }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("unknown adapter 'nope'"),
    });
    expect(await router.handle('r', command({ command: 'sessions', adapter: 'ollama' }))).toMatchObject({
      ok: false,
      error: expect.stringContaining('2 enabled instances'),
    });
    expect(await router.handle('r', command({ command: 'list_models', providerId: 'ghost' }))).toMatchObject({
      ok: false,
      error: "unknown provider 'ghost' on this node",
    });
  });

  it('turns an adapter that throws into ok=false and releases its adapter hold', async () => {
    const { router, cli } = setup();
    cli.built[0].onCommand = () => Promise.reject(new Error('pipe closed'));
    const response = await router.handle('r', command({ command: 'sessions' }));
    expect(response).toMatchObject({ ok: false, error: "sessions failed on adapter 'cli': pipe closed" });
    expect(router.inFlight).toBe(0);
  });

  it('aborts running commands on abortAll', async () => {
    const { router, cli } = setup();
    cli.built[0].onCommand = (_request, options) =>
      new Promise((resolve) =>
        options.signal.addEventListener('abort', () =>
          resolve(create.nodeCommandResponse({ ok: false, error: String(options.signal.reason) })),
        ),
      );
    const pending = router.handle('r', command({ command: 'sessions' }));
    expect(router.inFlight).toBe(1);
    router.abortAll('shutdown');
    expect(await pending).toMatchObject({ ok: false, error: 'shutdown' });
    expect(router.inFlight).toBe(0);
  });
});

describe('CommandRouter discover', () => {
  it('runs a forced discovery pass and answers with what it found, without touching any adapter', async () => {
    const router = new CommandRouter({
      adapters: {
        acquire: () => {
          throw new Error('no adapter should be used');
        },
      },
      outbound: new RecordingOutbound(),
      logger: silentLogger,
      maxConcurrency: () => 1,
      providers: () => [],
      linkStatus: () => ({ nodeId: 'n', connected: true, state: 'connected' }),
      discover: () =>
        Promise.resolve({
          sent: true,
          discovery: {
            backends: [
              {
                kind: 'ollama',
                baseUrl: 'http://127.0.0.1:11434',
                models: ['a', 'b'],
                version: '',
                loadedModels: [],
              },
              {
                kind: 'vllm',
                baseUrl: 'http://127.0.0.1:8000/v1',
                models: ['c'],
                version: '',
                loadedModels: [],
              },
            ],
            clis: [{ name: 'codex', path: '/bin/codex', version: '' }],
            host: {
              os: 'linux',
              arch: 'x64',
              cpuCores: 2,
              memoryBytes: 1,
              gpus: [],
              agentsSeparateUser: false,
              agentUser: '',
              agentWorkspaceRoot: '',
            },
            discoveredAtUnixMs: 1,
          },
        }),
    });
    const response = await router.handle('r1', command({ command: 'discover', adapter: '' }));
    expect(response).toMatchObject({
      ok: true,
      result: { backends: 'ollama,vllm', clis: 'codex', models: '3', gpus: '0', reported: 'true' },
    });
  });

  it('answers a clear error on a node without discovery', async () => {
    const { router } = setup();
    const response = await router.handle('r1', command({ command: 'discover', adapter: '' }));
    expect(response).toMatchObject({ ok: false, error: 'discovery is not enabled on this node' });
  });
});
