import { describe, expect, it } from '@jest/globals';
import { parseConfigText, renderNodeEntries, type EdgeConfig } from '@iop/config';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { planAdoption } from './adoption-plan.js';

function config(yaml: string): EdgeConfig {
  const result = parseConfigText(`edge: { id: e1 }\n${yaml}`, 'edge.yaml');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const DISCOVERED: NodeDiscovered = {
  backends: [
    {
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      models: ['llama3.2:3b', 'qwen3:8b'],
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
  clis: [
    { name: 'claude', path: '/usr/local/bin/claude', version: '2.0.14 (Claude Code)' },
    { name: 'codex', path: '/usr/bin/codex', version: 'codex-cli 0.46.0' },
    { name: 'someday', path: '/usr/bin/someday', version: '1' },
  ],
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

describe('planAdoption', () => {
  it('plans an instance and a provider per server, one CLI instance with shipped profiles, and the models', () => {
    const plan = planAdoption(config('nodes:\n  - id: gpu-box\n'), 'gpu-box', DISCOVERED);
    expect(plan.newNode).toBe(false);
    expect(plan.notes).toEqual([]);
    expect(plan.entries.instances.map((entry) => entry.value)).toEqual([
      { name: 'ollama', type: 'ollama', base_url: 'http://127.0.0.1:11434' },
      { name: 'vllm', type: 'openai_compat', provider: 'vllm', base_url: 'http://127.0.0.1:8000/v1' },
      {
        name: 'agents',
        type: 'cli',
        profiles: {
          claude: expect.objectContaining({ command: 'claude', output_format: 'claude-stream-json' }),
          codex: expect.objectContaining({ command: 'codex', output_format: 'codex-json' }),
        },
      },
    ]);
    expect(plan.entries.instances[2]?.comment).toBe(
      'discovered on PATH: claude 2.0.14 (Claude Code), codex codex-cli 0.46.0 (profiles as in the shipped configs/edge.yaml)' +
        "; no run_as: agents run as the node's user (a prompt can read the node's token, identity key and history)",
    );
    expect(plan.entries.providers.map((entry) => entry.value)).toEqual([
      {
        id: 'gpu-box-ollama',
        type: 'ollama',
        category: 'local_inference',
        adapter: 'ollama',
        models: ['llama3.2:3b', 'qwen3:8b'],
        capacity: 1,
        lifecycle_capabilities: ['list_models', 'load_model', 'unload_model', 'pull_model'],
      },
      {
        id: 'gpu-box-vllm',
        type: 'vllm',
        category: 'local_inference',
        adapter: 'vllm',
        models: ['Qwen/Qwen3-8B'],
        capacity: 4,
        lifecycle_capabilities: ['list_models'],
      },
      {
        id: 'gpu-box-agents',
        type: 'cli',
        category: 'cli',
        adapter: 'agents',
        models: ['claude', 'codex'],
        capacity: 2,
      },
    ]);
    // Every capacity says why.
    for (const entry of plan.entries.providers) expect(entry.comment).toMatch(/^capacity \d+: .+/);
    expect(plan.entries.models.map((entry) => entry.value)).toEqual([
      { id: 'llama3.2:3b', providers: { 'gpu-box-ollama': 'llama3.2:3b' } },
      { id: 'qwen3:8b', providers: { 'gpu-box-ollama': 'qwen3:8b' } },
      { id: 'Qwen/Qwen3-8B', providers: { 'gpu-box-vllm': 'Qwen/Qwen3-8B' } },
      { id: 'claude', providers: { 'gpu-box-agents': 'claude' } },
      { id: 'codex', providers: { 'gpu-box-agents': 'codex' } },
    ]);
  });

  it('never overwrites a models[] entry: the clash is reported and the entry left alone', () => {
    const plan = planAdoption(
      config(
        'models:\n  - { id: qwen3:8b, providers: { elsewhere: qwen3:8b } }\nnodes:\n  - id: gpu-box\n  - id: n2\n    adapters: { ollama: { base_url: "http://10.0.0.2:11434" } }\n    providers: [{ id: elsewhere, type: ollama, category: api, adapter: ollama, models: [qwen3:8b] }]\n',
      ),
      'gpu-box',
      DISCOVERED,
      new Set(['ollama']),
    );
    expect(plan.entries.models.map((entry) => entry.value.id)).toEqual(['llama3.2:3b']);
    expect(plan.notes).toEqual([
      'models[qwen3:8b] already exists: not changed (add "gpu-box-ollama: qwen3:8b" to its providers to pool this copy)',
    ]);
  });

  it('pools a model served by two discovered servers under one new entry', () => {
    const plan = planAdoption(config('nodes:\n  - id: n1\n'), 'n1', {
      ...DISCOVERED,
      backends: [
        { ...DISCOVERED.backends[0], models: ['shared'] },
        { ...DISCOVERED.backends[1], models: ['shared'] },
      ],
      clis: [],
    });
    expect(plan.entries.models.map((entry) => entry.value)).toEqual([
      { id: 'shared', providers: { 'n1-ollama': 'shared', 'n1-vllm': 'shared' } },
    ]);
  });

  it('skips servers and CLIs the node already has, and picks free names and provider ids', () => {
    const plan = planAdoption(
      config(
        [
          'nodes:',
          '  - id: n1',
          '    adapters:',
          '      ollama: { base_url: "http://127.0.0.1:11434/" }',
          '      instances:',
          '        - { name: vllm, type: openai_compat, base_url: "http://10.9.9.9:8000/v1" }',
          '        - { name: agents, type: cli, profiles: { mine: { command: claude } } }',
          '    providers:',
          '      - { id: n1-vllm, type: vllm, category: api, adapter: vllm }',
        ].join('\n') + '\n',
      ),
      'n1',
      DISCOVERED,
    );
    expect(plan.entries.instances.map((entry) => entry.value['name'])).toEqual(['vllm-2', 'agents-2']);
    expect(plan.entries.providers.map((entry) => entry.value['id'])).toEqual(['n1-vllm-2', 'n1-agents-2']);
    expect(Object.keys(plan.entries.instances[1]?.value['profiles'] as object)).toEqual(['codex']);
    expect(plan.notes).toEqual([
      "ollama at http://127.0.0.1:11434 is already instance 'ollama': skipped",
      "claude already has a profile in CLI instance 'agents': skipped",
    ]);
  });

  it('keeps only the kinds asked for, and marks a node that is not configured yet', () => {
    const plan = planAdoption(config(''), 'fresh', DISCOVERED, new Set(['vllm', 'codex']));
    expect(plan.newNode).toBe(true);
    expect(plan.entries.instances.map((entry) => entry.value['name'])).toEqual(['vllm', 'agents']);
    expect(plan.entries.models.map((entry) => entry.value.id)).toEqual(['Qwen/Qwen3-8B', 'codex']);
  });

  it('calls a remote server an api provider and an unknown flavour openai', () => {
    const plan = planAdoption(config('nodes:\n  - id: n1\n'), 'n1', {
      ...DISCOVERED,
      backends: [
        {
          kind: 'openai_compat',
          baseUrl: 'http://10.0.0.5:7000/v1',
          models: ['m'],
          version: '',
          loadedModels: [],
        },
      ],
      clis: [],
    });
    expect(plan.entries.instances[0]?.value).toEqual({
      name: 'openai-compat',
      type: 'openai_compat',
      provider: 'openai',
      base_url: 'http://10.0.0.5:7000/v1',
    });
    expect(plan.entries.providers[0]?.value).toMatchObject({
      type: 'openai_compat',
      category: 'api',
      capacity: 2,
    });
  });

  it('writes run_as and workspace_roots from a node whose agents run as a user of their own, and the YAML loads', () => {
    const separate: NodeDiscovered = {
      ...DISCOVERED,
      backends: [],
      host: {
        ...DISCOVERED.host,
        agentsSeparateUser: true,
        agentUser: 'iop-agent',
        agentWorkspaceRoot: '/var/lib/iop-node/workspaces',
      },
    };
    const plan = planAdoption(config('nodes:\n  - id: svc\n'), 'svc', separate);
    const cli = plan.entries.instances[0];
    expect(cli?.value).toMatchObject({
      name: 'agents',
      type: 'cli',
      run_as: 'iop-agent',
      workspace_roots: ['/var/lib/iop-node/workspaces'],
    });
    expect(cli?.comment).toContain(
      'run_as iop-agent and workspace_roots [/var/lib/iop-node/workspaces]: the node runs its agents as that user',
    );
    expect(plan.entries.providers[0]?.comment).toContain("on iop-agent's account");
    const loaded = config(renderNodeEntries(plan.entries));
    const instance = loaded.nodes[0]?.adapters.instances[0];
    expect(instance).toMatchObject({
      type: 'cli',
      run_as: 'iop-agent',
      workspace_roots: ['/var/lib/iop-node/workspaces'],
    });
  });

  it('writes neither on a node whose agents share its user, says so, and the YAML loads', () => {
    const plan = planAdoption(config(''), 'laptop', { ...DISCOVERED, backends: [] });
    const cli = plan.entries.instances[0];
    expect(cli?.value).not.toHaveProperty('run_as');
    expect(cli?.value).not.toHaveProperty('workspace_roots');
    expect(cli?.comment).toContain("no run_as: agents run as the node's user");
    const text = renderNodeEntries(plan.entries);
    expect(text).toContain('# discovered on PATH:');
    expect(text).toContain("agents run as the node's user");
    const instance = config(text).nodes[0]?.adapters.instances[0];
    expect(instance).toMatchObject({ type: 'cli', run_as: '', workspace_roots: [] });
  });

  it('adds each CLI’s fabric profile calling the given model when asked (--fabric-model)', () => {
    const plan = planAdoption(
      config(''),
      'laptop',
      { ...DISCOVERED, backends: [] },
      undefined,
      'local-model',
    );
    const profiles = (
      plan.entries.instances[0]?.value as { profiles: Record<string, Record<string, unknown>> }
    ).profiles;
    expect(Object.keys(profiles).sort()).toEqual(['claude', 'claude-fabric', 'codex', 'codex-fabric']);
    expect(profiles['claude-fabric']).toMatchObject({ fabric_model: 'local-model', mode: 'oneshot' });
    expect(profiles['codex-fabric']?.['fabric_model']).toBe('local-model');
    expect(profiles['claude']?.['fabric_model']).toBeUndefined();
  });
});
