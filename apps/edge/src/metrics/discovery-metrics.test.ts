import { describe, expect, it } from '@jest/globals';
import { createEventBus } from '../events/event-bus.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { EdgeMetrics } from './edge-metrics.js';

const DISCOVERED: NodeDiscovered = {
  backends: [
    {
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      models: ['a', 'b', 'c'],
      version: '',
      loadedModels: [],
    },
    { kind: 'vllm', baseUrl: 'http://127.0.0.1:8000/v1', models: ['d'], version: '', loadedModels: [] },
  ],
  clis: [
    { name: 'claude', path: '/bin/claude', version: '2.0.14' },
    { name: 'codex', path: '/bin/codex', version: '' },
  ],
  host: {
    os: 'linux',
    arch: 'x64',
    cpuCores: 8,
    memoryBytes: 1,
    gpus: [{ name: 'G', memoryBytes: 1, vendor: 'nvidia' }],
    agentsSeparateUser: false,
    agentUser: '',
    agentWorkspaceRoot: '',
  },
  discoveredAtUnixMs: 1,
};

describe('EdgeMetrics discovery gauges', () => {
  it('exposes the counts of each connected node’s latest report at scrape time', async () => {
    let nodes: { nodeId: string; discovered?: NodeDiscovered }[] = [
      { nodeId: 'n1', discovered: DISCOVERED },
      { nodeId: 'old-node' },
    ];
    const metrics = new EdgeMetrics({ discoveredNodes: () => nodes });
    const body = (await metrics.render()).body;
    expect(body).toContain('iop_node_discovered_backends{node="n1",kind="ollama"} 1');
    expect(body).toContain('iop_node_discovered_backends{node="n1",kind="vllm"} 1');
    expect(body).toContain('iop_node_discovered_models{node="n1",kind="ollama"} 3');
    expect(body).toContain('iop_node_discovered_models{node="n1",kind="vllm"} 1');
    expect(body).toContain('iop_node_discovered_clis{node="n1",cli="claude"} 1');
    expect(body).toContain('iop_node_discovered_clis{node="n1",cli="codex"} 1');
    expect(body).toContain('iop_node_discovered_gpus{node="n1"} 1');
    expect(body).not.toContain('old-node');
    // A node that disconnected disappears from the gauges at the next scrape.
    nodes = [];
    expect((await metrics.render()).body).not.toContain('node="n1"');
  });

  it('does not count a discovery event as a disconnect', async () => {
    const events = createEventBus();
    const metrics = new EdgeMetrics();
    const stop = metrics.followEvents(events);
    const event = (kind: 'connected' | 'disconnected' | 'discovered') => ({
      type: 'node' as const,
      event: {
        kind,
        nodeId: 'n1',
        alias: 'n1',
        reason: kind === 'discovered' ? 'reported' : 'x',
        atUnixMs: 1,
      },
    });
    events.publish(event('connected'));
    events.publish(event('discovered'));
    events.publish(event('disconnected'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const body = (await metrics.render()).body;
    expect(body).toContain('iop_node_connections_total{node="n1"} 1');
    expect(body).toMatch(/iop_node_disconnects_total\{node="n1",reason="x"\} 1/);
    expect(body).not.toContain('reason="reported"');
    stop();
    events.close();
  });
});
