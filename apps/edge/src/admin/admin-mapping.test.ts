import { describe, it, expect } from '@jest/globals';
import { ProviderStatus } from '@iop/wire';
import type { NodeSummary } from '../present/node-summary.js';
import { toNodeInfo } from './admin-mapping.js';

const summary = (providers: NodeSummary['providers']): NodeSummary => ({
  nodeId: 'n1',
  alias: 'n1',
  agentVersion: '0.1.0',
  os: 'linux',
  arch: 'x64',
  hostname: 'box',
  remoteAddress: '127.0.0.1:1',
  connectedSinceUnixMs: 1,
  lastHeartbeatUnixMs: 2,
  adapters: ['vllm'],
  providers,
});

const pooled = (providerId: string, nodeId: string, capacity: number): ProviderStatus =>
  ProviderStatus.fromPartial({ providerId, nodeId, status: 'ready', health: 'unknown', capacity });

describe('toNodeInfo', () => {
  it("lists the pool's providers of the node, also those the node never reported (health probes off)", () => {
    const info = toNodeInfo(
      summary([{ providerId: 'reported', health: 'healthy', detail: '', cause: '', checkedAtUnixMs: 3 }]),
      [pooled('quiet', 'n1', 2), pooled('reported', 'n1', 4), pooled('elsewhere', 'n2', 1)],
    );
    expect(
      info.providers.map((provider) => [provider.providerId, provider.health, provider.capacity]),
    ).toEqual([
      ['reported', 'healthy', 4],
      ['quiet', 'unknown', 2],
    ]);
  });

  it("shows an open or half-open circuit over the node's healthy probe (one health state)", () => {
    const healthy = { health: 'healthy' as const, detail: 'ok', cause: '', checkedAtUnixMs: 3 };
    const info = toNodeInfo(
      summary([
        { providerId: 'tripped', ...healthy },
        { providerId: 'probing', ...healthy },
        { providerId: 'fine', ...healthy },
      ]),
      [
        { ...pooled('tripped', 'n1', 1), health: 'open' },
        { ...pooled('probing', 'n1', 1), health: 'half_open' },
        { ...pooled('fine', 'n1', 1), health: 'healthy' },
      ],
    );
    expect(
      info.providers.map((provider) => [provider.providerId, provider.health, provider.healthDetail]),
    ).toEqual([
      ['tripped', 'open', 'ok'],
      ['probing', 'half_open', 'ok'],
      ['fine', 'healthy', 'ok'],
    ]);
  });
});
