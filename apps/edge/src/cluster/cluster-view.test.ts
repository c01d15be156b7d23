import { describe, expect, it } from '@jest/globals';
import type { ProviderStatus } from '../service/types.js';
import { ClusterView, type EdgeState } from './cluster-view.js';

function provider(providerId: string, nodeId: string, patch: Partial<ProviderStatus> = {}): ProviderStatus {
  return {
    providerId,
    nodeId,
    status: 'ready',
    health: 'healthy',
    capacity: 2,
    inFlight: 0,
    queued: 0,
    servedModels: ['m1'],
    priority: 0,
    ...patch,
  };
}

function state(edgeId: string, providers: ProviderStatus[]): EdgeState {
  const nodes = [...new Set(providers.map((entry) => entry.nodeId))];
  return {
    edgeId,
    nodes,
    nodeSummaries: nodes.map((nodeId) => ({
      nodeId,
      alias: nodeId,
      agentVersion: 'test',
      os: 'linux',
      arch: 'x64',
      hostname: 'host',
      remoteAddress: '127.0.0.1:1',
      connectedSinceUnixMs: 0,
      lastHeartbeatUnixMs: 0,
      adapters: [],
      providers: [],
    })),
    providers,
    configRevision: 'r',
    bootId: 'b1',
    sentAtUnixMs: 0,
  };
}

function setup() {
  let now = 1_000;
  const view = new ClusterView('a', 500, () => now);
  return { view, advance: (ms: number) => (now += ms) };
}

describe('ClusterView', () => {
  it('ignores its own state and forgets edges silent for longer than the TTL', () => {
    const { view, advance } = setup();
    view.update(state('a', [provider('pa', 'na')]));
    view.update(state('b', [provider('pb', 'nb')]));
    expect(view.states().map((entry) => entry.edgeId)).toEqual(['b']);
    expect(view.edgeOfNode('nb')).toBe('b');
    expect(view.remoteNodes().map((node) => [node.nodeId, node.edgeId])).toEqual([['nb', 'b']]);
    advance(400);
    view.update(state('c', [provider('pc', 'nc')]));
    advance(200);
    expect(view.isLive('b')).toBe(false);
    expect(view.states().map((entry) => entry.edgeId)).toEqual(['c']);
    expect(view.sweep()).toEqual(['b']);
    expect(view.sweep()).toEqual([]);
    view.remove('c');
    expect(view.states()).toEqual([]);
  });

  it('shows providers of nodes on other edges with their figures instead of offline', () => {
    const { view } = setup();
    view.update(state('b', [provider('pb', 'nb', { inFlight: 2, queued: 3 })]));
    const merged = view.merge([
      provider('pa', 'na', { inFlight: 1 }),
      provider('pb', 'nb', { status: 'offline', health: 'unknown' }),
      provider('pc', 'nc', { status: 'offline', health: 'unknown' }),
    ]);
    expect(merged.map((entry) => [entry.providerId, entry.status, entry.inFlight, entry.queued])).toEqual([
      ['pa', 'ready', 1, 0],
      ['pb', 'ready', 2, 3],
      ['pc', 'offline', 0, 0],
    ]);
  });

  it('names the live remote edge where a provider is usable with a free slot (conversation affinity)', () => {
    const { view, advance } = setup();
    view.update(
      state('b', [
        provider('pb', 'nb', { inFlight: 1 }),
        provider('pfull', 'nb', { inFlight: 2 }),
        provider('psick', 'nb', { health: 'unhealthy' }),
      ]),
    );
    expect(view.edgeOfFreeProvider('pb')).toBe('b');
    expect(view.edgeOfFreeProvider('pfull')).toBeUndefined();
    expect(view.edgeOfFreeProvider('psick')).toBeUndefined();
    expect(view.edgeOfFreeProvider('unknown')).toBeUndefined();
    advance(600);
    expect(view.edgeOfFreeProvider('pb')).toBeUndefined();
  });

  it('places a run here while a local provider has room, then on the edge with the most free slots', () => {
    const { view } = setup();
    view.update(state('b', [provider('pb', 'nb', { inFlight: 1 })]));
    view.update(state('c', [provider('pc', 'nc', { inFlight: 0 })]));
    const ids = ['pa', 'pb', 'pc'];
    expect(view.place(ids, [provider('pa', 'na', { inFlight: 1 })])).toEqual({ kind: 'local' });
    expect(view.place(ids, [provider('pa', 'na', { inFlight: 2 })])).toEqual({ kind: 'remote', edgeId: 'c' });
    // Unhealthy or disabled providers do not count.
    expect(view.place(ids, [provider('pa', 'na', { health: 'unhealthy' })])).toEqual({
      kind: 'remote',
      edgeId: 'c',
    });
    // Nor one whose circuit is open (passive health).
    expect(view.place(ids, [provider('pa', 'na', { health: 'open' })])).toEqual({
      kind: 'remote',
      edgeId: 'c',
    });
    expect(view.place(['pa', 'pb'], [provider('pa', 'na', { inFlight: 2 })])).toEqual({
      kind: 'remote',
      edgeId: 'b',
    });
  });

  it('queues here when everything is full and a provider is local, else where the queue is shortest', () => {
    const { view } = setup();
    view.update(state('b', [provider('pb', 'nb', { inFlight: 2, queued: 5 })]));
    view.update(state('c', [provider('pc', 'nc', { inFlight: 2, queued: 1 })]));
    expect(view.place(['pa', 'pb', 'pc'], [provider('pa', 'na', { inFlight: 2, queued: 9 })])).toEqual({
      kind: 'local',
    });
    expect(
      view.place(['pa', 'pb', 'pc'], [provider('pa', 'na', { status: 'offline', health: 'unknown' })]),
    ).toEqual({ kind: 'remote', edgeId: 'c' });
    // No provider anywhere: local admission gives the refusal.
    expect(view.place(['px'], [])).toEqual({ kind: 'local' });
  });
});
