import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { createAdminClient } from '../admin/admin-client.js';
import { systemClock } from '../clock.js';
import { refreshHandler } from '../admin/admin-refresh.js';
import { startAdminServer, type AdminSurface } from '../admin/admin-server.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { silentLogger } from '../logging.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { createConfigRefresher, type ConfigRefresher } from '../refresh/config-refresher.js';
import { createNodeAdoptCommand } from './node-adopt.js';
import { runCli } from './run-cli.js';
import { memoryIo } from './test-support/memory-io.js';

const command = createNodeAdoptCommand({
  createClient: (options) => createAdminClient({ ...options, timeoutMs: 5000 }, systemClock),
});

const DISCOVERED: NodeDiscovered = {
  backends: [
    {
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      models: ['qwen3:8b'],
      version: '0.12.6',
      loadedModels: [],
    },
    {
      kind: 'vllm',
      baseUrl: 'http://127.0.0.1:8000/v1',
      models: ['Qwen/Qwen3-8B'],
      version: '0.11.0',
      loadedModels: [],
    },
  ],
  clis: [{ name: 'codex', path: '/usr/bin/codex', version: 'codex-cli 0.46.0' }],
  host: {
    os: 'linux',
    arch: 'x64',
    cpuCores: 8,
    memoryBytes: 1,
    gpus: [],
    agentsSeparateUser: false,
    agentUser: '',
    agentWorkspaceRoot: '',
  },
  discoveredAtUnixMs: 1,
};

function edgeYaml(adminAddress: string): string {
  return `# operator's edge.yaml
edge: { id: e1 }
refresh: { enabled: true, listen: "${adminAddress}" }
models:
  - { id: qwen3:8b, providers: { other-ollama: qwen3:8b } } # already pooled elsewhere
nodes:
  # the GPU box under the desk
  - id: gpu-box
  - id: other
    adapters: { ollama: { base_url: "http://10.0.0.2:11434" } }
    providers: [{ id: other-ollama, type: ollama, category: api, adapter: ollama, models: [qwen3:8b] }]
`;
}

describe('iop-edge node adopt', () => {
  let dir: string;
  let file: string;
  let surface: AdminSurface | undefined;
  let service: FakeEdgeService;
  let refresher: ConfigRefresher | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-node-adopt-'));
    file = path.join(dir, 'edge.yaml');
    service = FakeEdgeService.forConsole();
    service.nodes = [{ ...node('gpu-box', 'gpu-box', Date.UTC(2026, 11, 1)), discovered: DISCOVERED }];
  });

  afterEach(async () => {
    refresher?.close();
    await surface?.close();
    surface = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  /** An admin server whose RefreshConfig is a real ConfigRefresher over the file as first written. */
  async function serve(): Promise<string> {
    const ready: { handler?: ReturnType<typeof refreshHandler> } = {};
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      service,
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
      refreshEnabled: true,
      refreshHandler: (mode, yaml, configPath) => {
        if (!ready.handler) throw new Error('refresher not ready');
        return ready.handler(mode, yaml, configPath);
      },
    });
    await writeFile(file, edgeYaml(surface.address));
    const loaded = parseConfigText(await readFile(file, 'utf8'), file, { baseDir: dir });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
    refresher = createConfigRefresher({ config: loaded.config, configPath: file, clock: systemClock });
    ready.handler = refreshHandler(refresher);
    return surface.address;
  }

  it('--dry-run prints the entries it would add, reports the clash, and changes nothing', async () => {
    await serve();
    const before = await readFile(file, 'utf8');
    const { io, out, err } = memoryIo(dir);
    expect(await runCli(['node', 'adopt', 'gpu-box', '--dry-run', '--config', file], io, [command])).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(before);
    expect(refresher?.applied).toBe(0);
    const printed = out();
    expect(printed).toContain('(nothing written)');
    const yaml = printed.slice(printed.indexOf('\n') + 1);
    const entries = parseConfigText(yaml, 'dry-run.yaml');
    if (!entries.ok) throw new Error(JSON.stringify(entries.issues));
    expect(entries.config.nodes[0]?.adapters.instances.map((instance) => instance.name)).toEqual([
      'ollama',
      'vllm',
      'agents',
    ]);
    expect(entries.config.models.map((model) => model.id)).toEqual(['Qwen/Qwen3-8B', 'codex']);
    expect(printed).toContain('# capacity 1: one request at a time');
    expect(err()).toContain('note: models[qwen3:8b] already exists: not changed');
  });

  it('writes edge.yaml keeping the operator comments and applies it live, printing the refresh result', async () => {
    await serve();
    const { io, out } = memoryIo(dir);
    expect(await runCli(['node', 'adopt', 'gpu-box', '--config', file], io, [command])).toBe(0);
    const written = await readFile(file, 'utf8');
    expect(written).toContain("# operator's edge.yaml");
    expect(written).toContain('# the GPU box under the desk');
    expect(written).toContain('# already pooled elsewhere');
    const parsed = parseConfigText(written, file);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    const gpuBox = parsed.config.nodes.find((entry) => entry.id === 'gpu-box');
    expect(gpuBox?.providers.map((provider) => provider.id)).toEqual([
      'gpu-box-ollama',
      'gpu-box-vllm',
      'gpu-box-agents',
    ]);
    // The existing entry was not touched.
    expect(parsed.config.models.find((model) => model.id === 'qwen3:8b')?.providers).toEqual({
      'other-ollama': 'qwen3:8b',
    });
    expect(out()).toContain(
      'adopted into ' +
        file +
        ': instances ollama, vllm, agents; providers gpu-box-ollama, gpu-box-vllm, gpu-box-agents; models Qwen/Qwen3-8B, codex',
    );
    expect(out()).toContain('applied live (no restart needed)');
    expect(refresher?.applied).toBe(1);
    expect(refresher?.current().models.map((model) => model.id)).toEqual([
      'qwen3:8b',
      'Qwen/Qwen3-8B',
      'codex',
    ]);

    // Adopting again finds everything in place.
    const again = memoryIo(dir);
    expect(await runCli(['node', 'adopt', 'gpu-box', '--config', file], again.io, [command])).toBe(0);
    expect(again.out()).toBe('nothing to adopt for node gpu-box\n');
  });

  it('--only keeps the named kinds; an unknown kind is a usage error', async () => {
    await serve();
    const { io, out } = memoryIo(dir);
    expect(
      await runCli(['node', 'adopt', 'gpu-box', '--only', 'codex', '--dry-run', '--config', file], io, [
        command,
      ]),
    ).toBe(0);
    expect(out()).toContain('name: agents');
    expect(out()).not.toContain('ollama');
    const bad = memoryIo(dir);
    expect(
      await runCli(['node', 'adopt', 'gpu-box', '--only', 'gpt', '--config', file], bad.io, [command]),
    ).toBe(2);
    expect(bad.err()).toContain('unknown: gpt');
  });

  it('fails clearly for a node that is not connected or has reported nothing', async () => {
    await serve();
    let run = memoryIo(dir);
    expect(await runCli(['node', 'adopt', 'nowhere', '--config', file], run.io, [command])).toBe(1);
    expect(run.err()).toBe('iop-edge node adopt: node nowhere is not connected (see iop-edge nodes list)\n');
    service.nodes = [node('gpu-box', 'gpu-box', 1)];
    run = memoryIo(dir);
    expect(await runCli(['node', 'adopt', 'gpu-box', '--config', file], run.io, [command])).toBe(1);
    expect(run.err()).toContain('has not reported what it can run yet');
  });
});
