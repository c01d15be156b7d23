import { describe, expect, it } from '@jest/globals';
import { parseNvidiaSmi, probeHost } from './host-probe.js';
import { fakeProbeDeps } from './test-support/fake-probe-deps.js';

const GIB = 1024 ** 3;
const options = () => ({ timeoutMs: 100, signal: new AbortController().signal });

describe('parseNvidiaSmi', () => {
  it('reads name and MiB per line and skips malformed lines', () => {
    expect(
      parseNvidiaSmi('NVIDIA GeForce RTX 4090, 24564\nNVIDIA A100-SXM4-80GB, 81920\n\nbroken\nX, n/a\n'),
    ).toEqual([
      { name: 'NVIDIA GeForce RTX 4090', memoryBytes: 24564 * 1024 * 1024, vendor: 'nvidia' },
      { name: 'NVIDIA A100-SXM4-80GB', memoryBytes: 81920 * 1024 * 1024, vendor: 'nvidia' },
    ]);
  });
});

describe('probeHost', () => {
  it('reports the host facts and the GPUs nvidia-smi lists', async () => {
    const deps = fakeProbeDeps({
      executables: { 'nvidia-smi': '/usr/bin/nvidia-smi' },
      exec: {
        '/usr/bin/nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits': {
          stdout: 'NVIDIA GeForce RTX 3090, 24576\n',
        },
      },
      host: { platform: 'linux', arch: 'x64', cpuCores: 16, memoryBytes: 64 * GIB },
    });
    expect(await probeHost(deps, options())).toEqual({
      os: 'linux',
      arch: 'x64',
      cpuCores: 16,
      memoryBytes: 64 * GIB,
      gpus: [{ name: 'NVIDIA GeForce RTX 3090', memoryBytes: 24 * GIB, vendor: 'nvidia' }],
      agentsSeparateUser: false,
      agentUser: '',
      agentWorkspaceRoot: '',
    });
  });

  it('says whether CLI agents run as a user of their own (unknown = they share the node user)', async () => {
    const separate = fakeProbeDeps({
      host: {
        platform: 'linux',
        arch: 'x64',
        cpuCores: 2,
        memoryBytes: GIB,
        agentsSeparateUser: true,
        agentUser: '',
        agentWorkspaceRoot: '',
      },
    });
    expect((await probeHost(separate, options())).agentsSeparateUser).toBe(true);
    expect((await probeHost(fakeProbeDeps(), options())).agentsSeparateUser).toBe(false);
  });

  it('reports the agent user and workspace root only when the agents run as that user', async () => {
    const facts = {
      platform: 'linux',
      arch: 'x64',
      cpuCores: 2,
      memoryBytes: GIB,
      agentUser: 'iop-agent',
      agentWorkspaceRoot: '/var/lib/iop-node/workspaces',
    };
    const separate = await probeHost(
      fakeProbeDeps({ host: { ...facts, agentsSeparateUser: true } }),
      options(),
    );
    expect(separate).toMatchObject({
      agentsSeparateUser: true,
      agentUser: 'iop-agent',
      agentWorkspaceRoot: '/var/lib/iop-node/workspaces',
    });
    // --agent-user given but the node cannot switch users (not root): nothing that would make adopt write run_as.
    const shared = await probeHost(
      fakeProbeDeps({ host: { ...facts, agentsSeparateUser: false } }),
      options(),
    );
    expect(shared).toMatchObject({ agentsSeparateUser: false, agentUser: '', agentWorkspaceRoot: '' });
  });

  it('reports the Apple-silicon GPU with the unified memory, and no GPU without either tool', async () => {
    const mac = fakeProbeDeps({
      executables: { sysctl: '/usr/sbin/sysctl' },
      exec: { '/usr/sbin/sysctl -n machdep.cpu.brand_string': { stdout: 'Apple M2 Max\n' } },
      host: { platform: 'darwin', arch: 'arm64', cpuCores: 12, memoryBytes: 32 * GIB },
    });
    expect((await probeHost(mac, options())).gpus).toEqual([
      { name: 'Apple M2 Max', memoryBytes: 32 * GIB, vendor: 'apple' },
    ]);
    const plain = fakeProbeDeps();
    expect((await probeHost(plain, options())).gpus).toEqual([]);
    expect(plain.executed).toEqual([]);
  });
});
