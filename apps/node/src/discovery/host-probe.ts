// Host facts: OS, architecture, CPU cores, memory, whether CLI agents run as a user of their own, and GPUs where the platform tells — `nvidia-smi` when it is on
// PATH, and on Apple silicon the chip name from `sysctl` (its GPU shares the unified memory).
import type { DiscoveredGpu, DiscoveredHost } from '@iop/wire';
import type { ProbeDeps } from './probe-deps.js';

const MIB = 1024 * 1024;

export async function probeHost(
  deps: Pick<ProbeDeps, 'exec' | 'which' | 'env' | 'host'>,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<DiscoveredHost> {
  const facts = deps.host();
  const gpus: DiscoveredGpu[] = [];
  const nvidiaSmi = deps.which('nvidia-smi', deps.env['PATH']);
  if (nvidiaSmi) {
    const result = await deps.exec(
      nvidiaSmi,
      ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'],
      { timeoutMs: options.timeoutMs, env: deps.env, signal: options.signal },
    );
    if (result.code === 0) gpus.push(...parseNvidiaSmi(result.stdout));
  }
  if (facts.platform === 'darwin' && facts.arch === 'arm64') {
    const sysctl = deps.which('sysctl', deps.env['PATH']) ?? '/usr/sbin/sysctl';
    const result = await deps.exec(sysctl, ['-n', 'machdep.cpu.brand_string'], {
      timeoutMs: options.timeoutMs,
      env: deps.env,
      signal: options.signal,
    });
    const chip = result.code === 0 ? result.stdout.trim() : '';
    if (chip.startsWith('Apple')) gpus.push({ name: chip, memoryBytes: facts.memoryBytes, vendor: 'apple' });
  }
  return {
    os: facts.platform,
    arch: facts.arch,
    cpuCores: facts.cpuCores,
    memoryBytes: facts.memoryBytes,
    gpus,
    agentsSeparateUser: facts.agentsSeparateUser ?? false,
    // Only where the agents really run as that user: adopt writes these as the CLI instance's run_as/workspace_roots.
    agentUser: facts.agentsSeparateUser ? (facts.agentUser ?? '') : '',
    agentWorkspaceRoot: facts.agentsSeparateUser ? (facts.agentWorkspaceRoot ?? '') : '',
  };
}

/** `NVIDIA GeForce RTX 4090, 24564` lines (memory in MiB) → GPUs; malformed lines are skipped. */
export function parseNvidiaSmi(output: string): DiscoveredGpu[] {
  const gpus: DiscoveredGpu[] = [];
  for (const line of output.split(/\r?\n/)) {
    const separator = line.lastIndexOf(',');
    if (separator <= 0) continue;
    const name = line.slice(0, separator).trim();
    const mebibytes = Number(line.slice(separator + 1).trim());
    if (!name || !Number.isFinite(mebibytes) || mebibytes < 0) continue;
    gpus.push({ name, memoryBytes: Math.round(mebibytes) * MIB, vendor: 'nvidia' });
  }
  return gpus;
}
