import { describe, expect, it } from '@jest/globals';
import { createEventBus } from '../events/event-bus.js';
import { EdgeMetrics } from './edge-metrics.js';

const nodeEvent = (kind: 'connected' | 'disconnected', nodeId: string, reason = 'registered') => ({
  type: 'node' as const,
  event: { kind, nodeId, alias: nodeId, reason, atUnixMs: 1 },
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('EdgeMetrics per-node counters', () => {
  it('shows every node event at the next scrape, also when the text of the previous scrape is reused', async () => {
    const events = createEventBus();
    const metrics = new EdgeMetrics({ connectedNodes: () => 2 });
    const stop = metrics.followEvents(events);
    events.publish(nodeEvent('connected', 'n1'));
    await settle();
    const first = (await metrics.render()).body;
    expect(first).toContain('iop_node_connections_total{node="n1"} 1');
    // Nothing moved: the same per-node text, the rest of the page as fresh as ever.
    expect((await metrics.render()).body).toBe(first);

    events.publish(nodeEvent('connected', 'n2'));
    events.publish(nodeEvent('disconnected', 'n1', 'heartbeat-timeout'));
    events.publish(nodeEvent('connected', 'n1'));
    await settle();
    const body = (await metrics.render()).body;
    expect(body).toContain('iop_node_connections_total{node="n1"} 2');
    expect(body).toContain('iop_node_connections_total{node="n2"} 1');
    expect(body).toContain('iop_node_disconnects_total{node="n1",reason="heartbeat-timeout"} 1');
    expect(body).toContain('iop_nodes_connected 2');
    stop();
    events.close();
  });

  it('keeps one exposition page: each metric once, separated by one blank line like the others', async () => {
    const events = createEventBus();
    const metrics = new EdgeMetrics();
    const stop = metrics.followEvents(events);
    events.publish(nodeEvent('connected', 'n1'));
    await settle();
    const body = (await metrics.render()).body;
    for (const name of ['iop_node_connections_total', 'iop_node_disconnects_total', 'iop_nodes_connected']) {
      expect(body.split('\n').filter((line) => line === `# TYPE ${name} ${typeOf(name)}`)).toHaveLength(1);
    }
    expect(body).not.toContain('\n\n\n');
    expect(body.endsWith('\n')).toBe(true);
    expect(body.indexOf('\n\n# HELP iop_node_connections_total')).toBeGreaterThan(0);
    stop();
    events.close();
  });
});

function typeOf(name: string): string {
  return name.endsWith('_total') ? 'counter' : 'gauge';
}
