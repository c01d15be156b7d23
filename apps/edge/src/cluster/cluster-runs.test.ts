// The cluster's run lookups over a real nats-server (skipped with one printed line when it is missing): two edges'
// run registries joined by cluster-runs.ts. A run held on edge A is read, followed, cancelled and deleted from edge
// B by its own principal only; another principal (`team-a` for `team`'s run) and a malformed lookup get exactly
// what an unknown id gets.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { systemClock } from '../clock.js';
import type { RunKey, RunUpdate } from '../placement/run-directory.js';
import { RunRegistry } from '../service/run-registry.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { createRemoteRuns, RUNS_TOPIC, serveRuns } from './cluster-runs.js';
import type { FabricBus } from './fabric-bus.js';
import { createPeerCalls } from './peer-calls.js';

const available = natsServerAvailable('cluster run-lookup tests');
const suite = available ? describe : describe.skip;

let nats: NatsServer;
const connections: FabricBus[] = [];
const stops: (() => void)[] = [];

async function edge(edgeId: string, others: string[], maxSubscribers?: number) {
  const nc = await connectFabric(nats.url, edgeId);
  connections.push(nc);
  const peers = createPeerCalls({ clock: systemClock, nc, edgeId, liveEdges: () => others, timeoutMs: 2000 });
  const registry = new RunRegistry({
    clock: systemClock,
    remote: createRemoteRuns(peers),
    ...(maxSubscribers !== undefined ? { maxSubscribers } : {}),
  });
  stops.push(serveRuns(peers, registry));
  await nc.flush();
  return { registry, peers };
}

const task = (id: string, principal: string): RunKey => ({ principal, kind: 'a2a.task', id });

async function collect(updates: AsyncIterable<RunUpdate>): Promise<RunUpdate[]> {
  const seen: RunUpdate[] = [];
  for await (const update of updates) seen.push(update);
  return seen;
}

suite('run lookups through the fabric (cluster-runs over NATS)', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop();
    for (const nc of connections.splice(0)) await nc.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it("serves a run's own principal from the other edge, and answers any other principal like an unknown id", async () => {
    const a = await edge('edge-a', ['edge-b']);
    const b = await edge('edge-b', ['edge-a']);
    const reasons: string[] = [];
    const run = a.registry.add(task('t1', 'team'), { state: 'working' }, (reason) => {
      reasons.push(reason);
      run.end({ state: 'canceled' });
    });

    expect(await b.registry.get(task('t1', 'team'))).toEqual({ state: { state: 'working' }, ended: false });
    for (const other of ['team-a', '', 'tea']) {
      expect(await b.registry.get(task('t1', other))).toBeUndefined();
      expect(await b.registry.cancel(task('t1', other), 'not yours')).toBeUndefined();
      expect(await b.registry.subscribe(task('t1', other), new AbortController().signal)).toBeUndefined();
      expect(await b.registry.delete(task('t1', other))).toBe(false);
    }
    expect(await b.registry.get({ principal: 'team', kind: 'openai.response', id: 't1' })).toBeUndefined();
    expect(reasons).toEqual([]);

    // A malformed lookup (no principal) names no run: the same "none" as an unknown id.
    expect(await b.peers.ask(RUNS_TOPIC, { op: 'get', key: { kind: 'a2a.task', id: 't1' } })).toBeUndefined();
    expect(await b.peers.ask(RUNS_TOPIC, { op: 'drop', key: task('t1', 'team') })).toBeUndefined();

    const cancelled = await b.registry.cancel(task('t1', 'team'), 'from edge b');
    expect(cancelled).toEqual({ view: { state: { state: 'canceled' }, ended: true }, alreadyEnded: false });
    expect(reasons).toEqual(['from edge b']);
    expect((await b.registry.cancel(task('t1', 'team'), 'again'))?.alreadyEnded).toBe(true);
    expect(await b.registry.delete(task('t1', 'team'))).toBe(true);
    expect(a.registry.getLocal(task('t1', 'team'))).toBeUndefined();
    expect(await b.registry.get(task('t1', 'team'))).toBeUndefined();
  });

  it('treats a malformed answer from another edge as no answer', async () => {
    const b = await edge('edge-b', ['edge-c']);
    // An edge of the fabric (it holds the key) whose answers are garbage.
    const nc = await connectFabric(nats.url, 'edge-c');
    connections.push(nc);
    const rogue = createPeerCalls({
      clock: systemClock,
      nc,
      edgeId: 'edge-c',
      liveEdges: () => ['edge-b'],
      timeoutMs: 2000,
    });
    stops.push(rogue.serve(RUNS_TOPIC, () => Promise.resolve({ value: { state: 'x', ended: 'yes' } })));
    await nc.flush();
    expect(await b.registry.get(task('t3', 'team'))).toBeUndefined();
    expect(await b.registry.cancel(task('t3', 'team'), 'r')).toBeUndefined();
  });

  it('relays a subscription from the holding edge until the run ends, and passes its refusals on typed', async () => {
    const a = await edge('edge-a', ['edge-b'], 1);
    const b = await edge('edge-b', ['edge-a']);
    const run = a.registry.add(task('t2', 'team'), 'submitted', () => undefined);
    const updates = await b.registry.subscribe(task('t2', 'team'), new AbortController().signal);
    if (!updates) throw new Error('edge b found no subscription');
    const iterator = updates[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { state: 'submitted' } });
    // edge a allows one subscription per run: the second, from edge b, is refused with the registry's code.
    await expect(
      b.registry.subscribe(task('t2', 'team'), new AbortController().signal),
    ).rejects.toMatchObject({
      code: 'too_many_subscribers',
    });
    run.emit({ kind: 'artifact-update', text: 'hi' });
    run.end('completed');
    const rest: RunUpdate[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest).toEqual([{ event: { kind: 'artifact-update', text: 'hi' } }]);
    const after = await b.registry.subscribe(task('t2', 'team'), new AbortController().signal);
    if (!after) throw new Error('edge b found no subscription after the end');
    expect(await collect(after)).toEqual([{ state: 'completed' }]);
  });
});
