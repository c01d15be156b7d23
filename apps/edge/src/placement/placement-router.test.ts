// Conversation affinity across the fabric: the router sends a run back to the edge whose provider served its key.
import { afterEach, describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { createNodeRegistry } from '../node/node-registry.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import type { ProviderStatus } from '../present/provider-status.js';
import { FakeNodes, modelConfig, nodeConfig, providerConfig } from '../pool/test-support/pool-fixture.js';
import { testPrincipal } from '../governance/test-support/test-principal.js';
import { affinityKeyFor } from './affinity-key.js';
import { LocalPlacement } from './local-placement.js';
import type { Dispatched, PlacementRequest, Reservation } from './placement.js';
import { PlacementRouter, type RemoteEdges } from './placement-router.js';
import { SessionSlots } from './session-slots.js';

const AFFINITY = { enabled: true, hash_messages: true, max_wait_ms: 0 };
const pools: ProviderPool[] = [];

afterEach(() => {
  for (const pool of pools.splice(0)) pool.close();
});

/** Edge b owns provider pb (node nb); what it reports free is up to the test. */
class FakeRemote implements RemoteEdges {
  accepting = true;
  bFree = true;
  /** What the capacity rule alone would choose. */
  byCapacity: string | undefined = undefined;
  readonly reserved: string[] = [];

  edgeForProviders(): string | undefined {
    return this.byCapacity;
  }
  edgeOfNode(): string | undefined {
    return undefined;
  }
  edgeOfFreeProvider(providerId: string): string | undefined {
    return providerId === 'pb' && this.bFree ? 'edge-b' : undefined;
  }
  reserve(edgeId: string): Reservation {
    this.reserved.push(edgeId);
    const dispatched: Dispatched = {
      nodeId: 'nb',
      adapter: 'openai_compat',
      target: 'served-pb',
      sessionId: 's',
      providerId: 'pb',
      queueMs: 0,
    };
    return {
      edgeId,
      nodeId: '',
      adapter: '',
      target: '',
      providerId: undefined,
      queueMs: 0,
      deadlineSlackMs: 0,
      dispatch: () => Promise.resolve(dispatched),
      cancel: () => undefined,
      release: () => undefined,
    };
  }
  providers(local: ProviderStatus[]): ProviderStatus[] {
    return local;
  }
  nodes() {
    return [];
  }
}

function setup() {
  const config = {
    models: [modelConfig('m', { pa: 'served-pa', pb: 'served-pb' }, { affinity: AFFINITY })],
    nodes: [
      nodeConfig('na', [providerConfig('pa', { capacity: 1 })]),
      nodeConfig('nb', [providerConfig('pb', { capacity: 1 })]),
    ],
  };
  const nodes = new FakeNodes();
  nodes.connect('na'); // nb is connected to edge b
  const pool = createProviderPool({ config, nodes, pollIntervalMs: 60_000 });
  pools.push(pool);
  const local = new LocalPlacement({ registry: createNodeRegistry(), pool, sessions: new SessionSlots() });
  const remote = new FakeRemote();
  return { pool, remote, router: new PlacementRouter(local, pool, remote) };
}

const principal = testPrincipal({ id: 'team-a' });
const spec = {
  session: { kind: 'slot', baseId: 'openai' },
  messages: [create.chatMessage({ role: 'user', content: 'hi' })],
  affinityKey: 'conv-1',
} as const satisfies PlacementRequest['spec'];
const key = affinityKeyFor(spec, principal.id, AFFINITY) as string;

/** The run to model m as the supervisor builds it: the model's policy and the key resolved once, carried. */
function requestFor(router: PlacementRouter, who = principal): PlacementRequest {
  const destination = { kind: 'model', model: 'm' } as const;
  const modelPolicy = router.modelPolicy(destination);
  return {
    runId: 'r1',
    destination,
    spec: { ...spec, messages: [...spec.messages] },
    surface: 'openai',
    model: 'm',
    principal: who,
    traceparent: undefined,
    signal: undefined,
    modelPolicy,
    affinityKey: modelPolicy?.affinity ? affinityKeyFor(spec, who.id, modelPolicy.affinity) : undefined,
  };
}

describe('PlacementRouter conversation affinity', () => {
  it('remembers the provider a forwarded run was placed on, and sends the next turn to its edge', async () => {
    const { router, remote, pool } = setup();
    const request = requestFor(router);
    expect(request.affinityKey).toBe(key);
    const reservation = await router.reserve(request, 'edge-b');
    const observer = { onEvent: () => undefined, onLost: () => undefined };
    expect((await reservation.dispatch(request, observer, '')).providerId).toBe('pb');
    reservation.release();
    expect(pool.affinityProvider(key)).toBe('pb');
    // Here pa is free, and by capacity the run would stay here: the conversation goes back to edge b.
    expect(router.edgeFor(request)).toBe('edge-b');
    expect(remote.reserved).toEqual(['edge-b']);
    // Another key's identical conversation shares nothing.
    expect(router.edgeFor(requestFor(router, testPrincipal({ id: 'team-b' })))).toBeUndefined();
  });

  it('falls back to the capacity rule when the key’s provider is busy on its edge', () => {
    const { router, remote, pool } = setup();
    const request = requestFor(router);
    pool.recordAffinity(key, 'pb');
    remote.bFree = false;
    remote.byCapacity = 'edge-c';
    expect(router.edgeFor(request)).toBe('edge-c');
    remote.byCapacity = undefined;
    expect(router.edgeFor(request)).toBeUndefined();
  });

  it('keeps a conversation here while its local provider is free, whatever the capacity rule says', () => {
    const { router, remote, pool } = setup();
    const request = requestFor(router);
    pool.recordAffinity(key, 'pa');
    remote.byCapacity = 'edge-c';
    expect(router.edgeFor(request)).toBeUndefined();
    // A run without a key (no conversation named, no head) follows only the capacity rule.
    expect(router.edgeFor({ ...request, affinityKey: undefined })).toBe('edge-c');
  });
});
