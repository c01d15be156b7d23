import { describe, expect, it } from '@jest/globals';
import type { NodeDiscovery } from '@iop/wire';
import {
  discoveredToJson,
  discoverySummary,
  fromWireDiscovery,
  shortVersion,
  toWireDiscovery,
} from './node-discovered.js';

const GIB = 1024 ** 3;

const REPORT: NodeDiscovery = {
  backends: [
    {
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      models: ['llama3.2:3b', 'qwen3:8b', 'gemma3:4b'],
      version: '0.12.6',
      loadedModels: ['qwen3:8b'],
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
    { name: 'codex', path: '/usr/bin/codex', version: '' },
  ],
  host: {
    os: 'linux',
    arch: 'x64',
    cpuCores: 16,
    memoryBytes: 64 * GIB,
    gpus: [{ name: 'NVIDIA GeForce RTX 4090', memoryBytes: 24 * GIB, vendor: 'nvidia' }],
    agentsSeparateUser: false,
    agentUser: '',
    agentWorkspaceRoot: '',
  },
  discoveredAtUnixMs: Date.UTC(2026, 11, 1, 4, 0, 0),
};

describe('node discovery (edge view)', () => {
  it('summarizes a report on one line', () => {
    expect(discoverySummary(fromWireDiscovery(REPORT))).toBe(
      'ollama: 3 models · vllm: 1 model · claude 2.0.14 · codex · 1× GPU 24 GB · agents share node user',
    );
  });

  it('says agents share the node user unless the node reports a user of their own (older nodes: shared)', () => {
    const separate = fromWireDiscovery({
      ...REPORT,
      host: { ...REPORT.host!, agentsSeparateUser: true, agentUser: '', agentWorkspaceRoot: '' },
    });
    expect(discoverySummary(separate)).toBe(
      'ollama: 3 models · vllm: 1 model · claude 2.0.14 · codex · 1× GPU 24 GB',
    );
    expect((discoveredToJson(separate)['host'] as Record<string, unknown>)['agents_share_node_user']).toBe(
      false,
    );
    const old = fromWireDiscovery({ ...REPORT, host: undefined });
    expect(old.host.agentsSeparateUser).toBe(false);
    expect(
      discoverySummary({
        ...separate,
        clis: [],
        host: { ...separate.host, agentsSeparateUser: false, agentUser: '', agentWorkspaceRoot: '' },
      }),
    ).not.toContain('agents');
  });

  it('carries the agent user and workspace root only from a node whose agents run as a user of their own', () => {
    const separate = fromWireDiscovery({
      ...REPORT,
      host: {
        ...REPORT.host!,
        agentsSeparateUser: true,
        agentUser: 'iop-agent',
        agentWorkspaceRoot: '/var/lib/iop-node/workspaces',
      },
    });
    expect(separate.host).toMatchObject({
      agentUser: 'iop-agent',
      agentWorkspaceRoot: '/var/lib/iop-node/workspaces',
    });
    expect(discoveredToJson(separate)['host']).toMatchObject({
      agents_share_node_user: false,
      agent_user: 'iop-agent',
      agent_workspace_root: '/var/lib/iop-node/workspaces',
    });
    // A node that says its agents share its user: a stray user name is not taken for a separate one.
    const shared = fromWireDiscovery({ ...REPORT, host: { ...REPORT.host!, agentUser: 'iop-agent' } });
    expect(shared.host).toMatchObject({ agentsSeparateUser: false, agentUser: '', agentWorkspaceRoot: '' });
  });

  it('groups equal GPUs and says when nothing was reported or found', () => {
    const twoGpus = fromWireDiscovery({
      ...REPORT,
      backends: [],
      clis: [],
      host: { ...REPORT.host!, gpus: [REPORT.host!.gpus[0], REPORT.host!.gpus[0]] },
    });
    expect(discoverySummary(twoGpus)).toBe('2× GPU 24 GB');
    expect(discoverySummary(undefined)).toBe('not reported');
    expect(discoverySummary(fromWireDiscovery({ backends: [], clis: [], discoveredAtUnixMs: 1 }))).toBe(
      'nothing found',
    );
  });

  it('round-trips through the wire form and renders the --json shape', () => {
    const discovered = fromWireDiscovery(REPORT);
    expect(toWireDiscovery(discovered)).toEqual(REPORT);
    expect(discoveredToJson(discovered)).toEqual({
      backends: [
        {
          kind: 'ollama',
          base_url: 'http://127.0.0.1:11434',
          models: ['llama3.2:3b', 'qwen3:8b', 'gemma3:4b'],
          loaded_models: ['qwen3:8b'],
          version: '0.12.6',
        },
        {
          kind: 'vllm',
          base_url: 'http://127.0.0.1:8000/v1',
          models: ['Qwen/Qwen3-8B'],
          loaded_models: [],
          version: '0.11.0',
        },
      ],
      clis: [
        { name: 'claude', path: '/usr/local/bin/claude', version: '2.0.14 (Claude Code)' },
        { name: 'codex', path: '/usr/bin/codex', version: '' },
      ],
      host: {
        os: 'linux',
        arch: 'x64',
        cpu_cores: 16,
        memory_bytes: 64 * GIB,
        gpus: [{ name: 'NVIDIA GeForce RTX 4090', vendor: 'nvidia', memory_bytes: 24 * GIB }],
        agents_share_node_user: true,
        agent_user: '',
        agent_workspace_root: '',
      },
      discovered_at: '2026-12-01T04:00:00.000Z',
    });
  });

  it.each([
    ['2.0.14 (Claude Code)', '2.0.14'],
    ['codex-cli 0.46.0', '0.46.0'],
    ['', ''],
    ['unknown', ''],
  ])('shortVersion(%p) = %p', (input, expected) => {
    expect(shortVersion(input)).toBe(expected);
  });
});
