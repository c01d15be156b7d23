// A run's model is resolved once per attempt and carried on the PlacementRequest: the router, the local placement
// and the service's token estimate and retry limit read that one resolution. A retry resolves again (a live
// refresh may have changed the model between attempts); the affinity key is derived once from the same policy.
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfigText, type ModelConfig } from '@iop/config';
import { create, type RunEventPart, type RunRequest } from '@iop/wire';
import { ManualClock } from '@iop/clock';
import { createEventBus } from '../events/event-bus.js';
import { createGovernor } from '../governance/governor.js';
import { testPrincipal } from '../governance/test-support/test-principal.js';
import { silentLogger } from '../logging.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { affinityKeyFor } from '../placement/affinity-key.js';
import {
  createProviderPool,
  type AcquireOptions,
  type Lease,
  type ModelPolicy,
  type NodeLoad,
  type PoolConfig,
  type ProviderPool,
  type RouteDemand,
} from '../pool/provider-pool.js';
import type { ProviderStatus } from '../present/provider-status.js';
import { ScriptedNode } from '../test-support/scripted-node.js';
import { createEdgeService } from './edge-service.js';
import type { RunHandle, RunSpec } from './types.js';

const CONFIG = (() => {
  const result = parseConfigText(
    `
edge: { id: edge-a }
refresh: { enabled: false, admin_token: "" }
models:
  - { id: m, providers: { pa: "ma", pb: "mb" }, retry: { max_attempts: 2 }, affinity: { enabled: true } }
nodes:
  - id: na
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["ma"], capacity: 1, priority: 0 }
  - id: nb
    adapters: { ollama: { base_url: "http://127.0.0.1:11435" } }
    providers:
      - { id: pb, type: ollama, category: local_inference, adapter: ollama, models: ["mb"], capacity: 1, priority: 1 }
`,
    'model-resolution-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();

/** The real pool, counting every models[] lookup made through it and recording what each acquire asked. */
class CountingPool implements ProviderPool {
  lookups = 0;
  readonly acquired: AcquireOptions[] = [];

  constructor(private readonly inner: ProviderPool) {}

  hasModel(model: string): boolean {
    return this.inner.hasModel(model);
  }
  model(model: string): ModelConfig | undefined {
    this.lookups += 1;
    return this.inner.model(model);
  }
  modelPolicy(model: string): ModelPolicy | undefined {
    this.lookups += 1;
    return this.inner.modelPolicy(model);
  }
  modelIds(): string[] {
    return this.inner.modelIds();
  }
  modelBackends(model: string) {
    return this.inner.modelBackends(model);
  }
  acquire(model: string, options: AcquireOptions = {}): Promise<Lease> {
    this.acquired.push(options);
    return this.inner.acquire(model, options);
  }
  acquireRoute(route: RouteDemand, options?: AcquireOptions): Promise<Lease> {
    return this.inner.acquireRoute(route, options);
  }
  applyConfig(config: PoolConfig): void {
    this.inner.applyConfig(config);
  }
  affinityProvider(key: string): string | undefined {
    return this.inner.affinityProvider(key);
  }
  recordAffinity(key: string, providerId: string): void {
    this.inner.recordAffinity(key, providerId);
  }
  notifyChanged(): void {
    this.inner.notifyChanged();
  }
  snapshot(): ProviderStatus[] {
    return this.inner.snapshot();
  }
  nodeLoads(): NodeLoad[] {
    return this.inner.nodeLoads();
  }
  totals(): { inFlight: number; queued: number } {
    return this.inner.totals();
  }
  start(): void {
    this.inner.start();
  }
  close(): void {
    this.inner.close();
  }
}

const pools: ProviderPool[] = [];
const nodes: ScriptedNode[] = [];

afterEach(() => {
  for (const node of nodes.splice(0)) node.stop();
  for (const pool of pools.splice(0)) pool.close();
});

const OK: RunEventPart[] = [
  { type: 'text-delta', text: 'hi' },
  { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 },
];
const FAIL: RunEventPart[] = [
  { type: 'error', code: 'upstream_http_503', message: '503', retryable: true, backendMs: 0 },
];

/**
 * `onRequest` runs as a node receives a run (before it answers): where a test changes the config; a run it
 * returns `'hold'` for plays nothing and waits for its cancel.
 */
function setup(
  failOn: string | undefined,
  onRequest: (request: RunRequest) => 'hold' | undefined | void = () => undefined,
) {
  const clock = new ManualClock();
  const registry = createNodeRegistry();
  for (const nodeId of ['na', 'nb']) {
    const node = new ScriptedNode(nodeId, (request) => {
      if (onRequest(request) === 'hold') return { parts: [] };
      return { parts: request.providerId === failOn ? FAIL : OK };
    });
    nodes.push(node);
    registry.add(node.link);
  }
  const events = createEventBus({ replaySize: 16, queueSize: 256 });
  const real = createProviderPool({ config: CONFIG, nodes: registry, events, clock, pollIntervalMs: 20 });
  pools.push(real);
  real.start();
  const pool = new CountingPool(real);
  // A governor: the run's token estimate reads the model's policy too (the same resolution).
  const governor = createGovernor({
    clock,
    sink: { record: () => undefined },
    spent: { tokensSince: () => 0 },
  });
  const service = createEdgeService({ registry, pool, events, logger: silentLogger, clock, governor });
  return { pool, service, requests: () => nodes.flatMap((node) => node.requests) };
}

function withDefaultMaxTokens(maxTokens: number) {
  return { ...CONFIG, models: CONFIG.models.map((model) => ({ ...model, default_max_tokens: maxTokens })) };
}

const principal = testPrincipal({ id: 'team-a' });

function spec(overrides: Partial<RunSpec> = {}): RunSpec {
  return {
    session: { kind: 'slot', baseId: 'c' },
    messages: [
      create.chatMessage({ role: 'system', content: 'You review code.' }),
      create.chatMessage({ role: 'user', content: 'Look at this diff' }),
    ],
    ...overrides,
  };
}

async function waitFor(predicate: () => boolean): Promise<void> {
  for (let turn = 0; turn < 500 && !predicate(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!predicate()) throw new Error('condition not met');
}

async function finish(handle: RunHandle): Promise<void> {
  for await (const _event of handle.events) {
    // read to the end
  }
  await handle.done;
}

describe('the model of a run is resolved once per attempt', () => {
  it('looks the model up once for a run: placement, generation policy and token estimate share it', async () => {
    const { pool, service, requests } = setup(undefined);
    const before = pool.lookups;
    const handle = await service.submitRun({ kind: 'model', model: 'm' }, spec(), {
      surface: 'openai',
      principal,
    });
    await finish(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(pool.lookups - before).toBe(1);
    expect(requests()).toHaveLength(1);
  });

  it('looks it up again for a retry, which runs under a config refreshed between the attempts', async () => {
    let refreshed = false;
    const harness = setup('pa', (request) => {
      if (request.providerId !== 'pa' || refreshed) return;
      refreshed = true;
      // A live refresh while the first attempt runs: the model gains a default answer limit.
      harness.pool.applyConfig(withDefaultMaxTokens(77));
    });
    const before = harness.pool.lookups;
    const handle = await harness.service.submitRun({ kind: 'model', model: 'm' }, spec(), {
      surface: 'openai',
      principal,
    });
    await finish(handle);
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(handle.attempts).toBe(2);
    expect(harness.pool.lookups - before).toBe(2);
    const [first, second] = harness.requests();
    expect(first?.providerId).toBe('pa');
    expect(first?.params?.maxTokens).toBeUndefined();
    expect(second?.providerId).toBe('pb');
    expect(second?.params?.maxTokens).toBe(77);
  });

  it('looks it up once for a run queued across a refresh, which runs with the policy in force as it leaves the queue', async () => {
    const held = new Set(['hold-a', 'hold-b']);
    const harness = setup(undefined, (request) =>
      held.has(request.messages[1]?.content ?? '') ? 'hold' : undefined,
    );
    const { pool, service } = harness;
    const holding = (content: string) =>
      service.submitRun(
        { kind: 'model', model: 'm' },
        spec({
          messages: [
            create.chatMessage({ role: 'system', content: 's' }),
            create.chatMessage({ role: 'user', content }),
          ],
        }),
        { surface: 'openai', principal },
      );
    // Both providers' one slot taken: the next run waits in the queue.
    const busy = [await holding('hold-a'), await holding('hold-b')];
    const before = pool.lookups;
    const queued = service.submitRun({ kind: 'model', model: 'm' }, spec(), { surface: 'openai', principal });
    await waitFor(() => pool.totals().queued === 1);
    pool.applyConfig(withDefaultMaxTokens(300));
    await busy[0]?.cancel('done');
    const handle = await queued;
    await finish(handle);
    expect(pool.lookups - before).toBe(1);
    const sent = harness.requests().find((request) => request.runId === handle.runId);
    expect(sent?.params?.maxTokens).toBe(300);
    await busy[1]?.cancel('done');
    await Promise.all(busy.map((run) => run?.done));
  });
});

describe('the affinity key of a run', () => {
  it("is the conversation head's key scoped by principal, derived once and the same for every attempt", async () => {
    const { pool, service } = setup('pa');
    const run = spec();
    const handle = await service.submitRun({ kind: 'model', model: 'm' }, run, {
      surface: 'openai',
      principal,
    });
    await finish(handle);
    const affinity = pool.modelPolicy('m')?.affinity;
    if (!affinity) throw new Error('model m has affinity on');
    const expected = affinityKeyFor(run, principal.id, affinity);
    expect(expected).toMatch(/^[0-9a-f]{32}$/);
    expect(pool.acquired.map((options) => options.affinityKey)).toEqual([expected, expected]);
  });

  it("prefers the caller's named conversation over the head, and gives another principal another key", async () => {
    const { pool, service } = setup(undefined);
    const other = testPrincipal({ id: 'team-b' });
    for (const who of [principal, other]) {
      const handle = await service.submitRun(
        { kind: 'model', model: 'm' },
        spec({ affinityKey: 'session-7' }),
        { surface: 'openai', principal: who },
      );
      await finish(handle);
    }
    const [keyA, keyB] = pool.acquired.map((options) => options.affinityKey);
    const affinity = pool.modelPolicy('m')?.affinity;
    if (!affinity) throw new Error('model m has affinity on');
    expect(keyA).toBe(affinityKeyFor({ messages: [], affinityKey: 'session-7' }, 'team-a', affinity));
    expect(keyB).toBe(affinityKeyFor({ messages: [], affinityKey: 'session-7' }, 'team-b', affinity));
    expect(keyA).not.toBe(keyB);
    expect(keyA).not.toBe(affinityKeyFor(spec(), 'team-a', affinity));
  });

  it('is not derived for a model whose affinity has nothing to choose (one provider)', async () => {
    const { pool, service } = setup(undefined);
    pool.applyConfig({
      ...CONFIG,
      models: CONFIG.models.map((model) => ({ ...model, providers: { pa: 'ma' } })),
    });
    const handle = await service.submitRun({ kind: 'model', model: 'm' }, spec(), {
      surface: 'openai',
      principal,
    });
    await finish(handle);
    expect(pool.acquired.map((options) => options.affinityKey)).toEqual([undefined]);
  });
});
