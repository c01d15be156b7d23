// The dashboard's overview in cluster mode: per-edge figures next to the cluster-wide pool; none on one edge.
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import type { ProviderStatus } from '../service/types.js';
import { FakeEdgeService, fakeNode } from '../test-support/fake-edge-service.js';
import type { UiAssets } from './ui-assets.js';
import type { UiOverview } from '@iop/ui-api';
import { startUiSurface, type UiCore, type UiSurface } from './ui-surface.js';

const config = (() => {
  const result = parseConfigText(
    `edge: { id: e1 }\nrefresh: { enabled: false, admin_token: "" }\nui: { enabled: true, listen: "127.0.0.1:0" }\n`,
    'ui-cluster.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();
const assets: UiAssets = new Map([
  ['/index.html', { contentType: 'text/html', body: Buffer.from('<p>ui</p>') }],
]);
const metrics = { providerRejections: { get: () => Promise.resolve({ values: [] }) } };

function provider(providerId: string, nodeId: string, inFlight: number, queued: number): ProviderStatus {
  return {
    providerId,
    nodeId,
    status: 'ready',
    health: 'healthy',
    capacity: 2,
    inFlight,
    queued,
    servedModels: ['m'],
    priority: 0,
  };
}

let surface: UiSurface | undefined;
let events: ClosableEventBus | undefined;
afterEach(async () => {
  await surface?.close();
  surface = undefined;
  events?.close();
});

async function overviewOf(service: FakeEdgeService): Promise<UiOverview> {
  events = createEventBus({ replaySize: 16, queueSize: 64 });
  const core: UiCore = {
    config,
    service,
    events,
    logger: silentLogger,
    refresher: undefined,
    metrics: metrics as unknown as UiCore['metrics'],
  };
  surface = await startUiSurface(core, { assets });
  const response = await fetch(`${surface.address}api/v1/overview`);
  return (await response.json()) as UiOverview;
}

describe('dashboard overview in cluster mode', () => {
  it('adds each edge’s nodes, capacity, in_flight and queued', async () => {
    const service = FakeEdgeService.forConsole();
    service.nodes = [fakeNode('n1')];
    const clustered = Object.assign(service, {
      providers: () => [provider('p1', 'n1', 1, 0), provider('p2', 'n2', 2, 3), provider('p3', 'n3', 0, 0)],
      inFabric: true,
      fabricNodes: () => [
        { ...fakeNode('n1'), edgeId: 'e1' },
        { ...fakeNode('n2'), edgeId: 'e2' },
        { ...fakeNode('n3'), edgeId: 'e2' },
      ],
    });
    const overview = await overviewOf(clustered);
    expect(overview.cluster?.edges).toEqual([
      { edge_id: 'e1', nodes: 1, capacity: 2, in_flight: 1, queued: 0 },
      { edge_id: 'e2', nodes: 2, capacity: 4, in_flight: 2, queued: 3 },
    ]);
    expect(overview.totals.in_flight).toBe(3);
  });

  it('has no cluster figures on a single edge', async () => {
    const service = FakeEdgeService.forConsole();
    service.nodes = [fakeNode('n1')];
    const overview = await overviewOf(service);
    expect(overview.cluster).toBeUndefined();
  });
});
