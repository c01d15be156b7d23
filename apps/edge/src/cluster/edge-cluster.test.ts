// Two edges over a real nats-server (skipped with one printed line when it is missing): each edge is the real
// service (run supervisor, placement, provider pool) with the cluster below it as its remote placement, and one
// scripted node on a real NodeLink whose backend counts concurrency per provider.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { create } from '@iop/wire';
import { Kvm } from '@nats-io/kv';
import { connect, type Msg } from '@nats-io/transport-node';
import { Registry } from 'prom-client';
import { systemClock } from '../clock.js';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import { silentLogger } from '../logging.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import { createEdgeService, type EdgeServiceImpl } from '../service/edge-service.js';
import type { RunEventWithMeta, RunHandle } from '../service/types.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { connectFabric, testKeyring } from '../test-support/fabric-bus-fixture.js';
import { ScriptedNode, type NodeScript } from '../test-support/scripted-node.js';
import { startEdgeCluster, type EdgeCluster } from './edge-cluster.js';

const available = natsServerAvailable('edge cluster tests');
const suite = available ? describe : describe.skip;

function config(edgeId: string, url: string): EdgeConfig {
  const result = parseConfigText(
    `
edge: { id: ${edgeId} }
refresh: { enabled: false, admin_token: "" }
cluster:
  enabled: true
  fabric_key_file: unused-the-test-passes-its-keyring
  nats: { servers: ["${url}"] }
  heartbeat_ms: 100
  state_ttl_ms: 1000
models:
  - { id: m, providers: { pa: "m1", pb: "m1" } }
nodes:
  - id: na
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: 1 }
  - id: nb
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pb, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: 1 }
`,
    'cluster-test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

/** Runs whose last message is `hold` wait for a cancel; others answer after 3 × 80 ms. */
const script: NodeScript = (input) => ({
  delayMs: 80,
  parts: [
    { type: 'start', sessionId: input.sessionId, adapter: input.adapter, target: input.target },
    { type: 'text-delta', text: `${input.providerId}: ${input.messages.at(-1)?.content ?? ''}` },
    ...(input.messages.at(-1)?.content === 'hold'
      ? []
      : [{ type: 'complete' as const, detail: 'stop', finishReason: 'stop', backendMs: 1 }]),
  ],
});

interface TestEdge {
  id: string;
  node: ScriptedNode;
  connected: Set<string>;
  dropped: string[];
  pool: ProviderPool;
  service: EdgeServiceImpl;
  events: ClosableEventBus;
  cluster: EdgeCluster;
  registry: Registry;
}

let nats: NatsServer;
const edges: TestEdge[] = [];

async function startEdge(id: string, nodeId: string): Promise<TestEdge> {
  const edgeConfig = config(id, nats.url);
  const nodes = createNodeRegistry();
  const node = new ScriptedNode(nodeId, script);
  nodes.add(node.link);
  const connected = new Set([nodeId]);
  const events = createEventBus({ replaySize: 16, queueSize: 256 });
  const pool = createProviderPool({ config: edgeConfig, nodes, events, pollIntervalMs: 20 });
  pool.start();
  const dropped: string[] = [];
  const registry = new Registry();
  const cluster = await startEdgeCluster({
    registry,
    config: edgeConfig,
    localNodes: () => nodes.list(),
    localProviders: () => pool.snapshot(),
    events,
    connectedNodes: () => [...connected],
    dropNode: (dropId) => {
      dropped.push(dropId);
      connected.delete(dropId);
    },
    logger: silentLogger,
    clock: systemClock,
    keyring: testKeyring(),
  });
  const service = createEdgeService({
    registry: nodes,
    pool,
    events,
    logger: silentLogger,
    edgeId: id,
    remote: cluster.remote,
  });
  await cluster.serve(service);
  const edge = { id, node, connected, dropped, pool, service, events, cluster, registry };
  edges.push(edge);
  return edge;
}

async function waitFor(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function collect(handle: RunHandle): Promise<RunEventWithMeta[]> {
  const events: RunEventWithMeta[] = [];
  for await (const event of handle.events) events.push(event);
  return events;
}

/** Fills edge a's one provider with a held run and waits until edge b sees it: a's next run is forwarded to b. */
async function holdLocalCapacity(a: TestEdge, b: TestEdge): Promise<RunHandle> {
  const local = await submit(a, 'hold');
  await a.cluster.publishState();
  await waitFor(() => b.cluster.view.states()[0]?.providers[0]?.inFlight === 1);
  return local;
}

/** `iop_cluster_ciphers_total{use, made}` of an edge. */
async function ciphers(edge: TestEdge, use: 'seal' | 'open', made: 'ahead' | 'in_place'): Promise<number> {
  const metric = await edge.registry.getSingleMetric('iop_cluster_ciphers_total')?.get();
  return metric?.values.find((value) => value.labels.use === use && value.labels.made === made)?.value ?? 0;
}

function submit(edge: TestEdge, text: string, signal?: AbortSignal): Promise<RunHandle> {
  return edge.service.submitRun(
    { kind: 'model', model: 'm' },
    {
      session: { kind: 'slot', baseId: 'c' },
      messages: [create.chatMessage({ role: 'user', content: text })],
    },
    { surface: 'openai', ...(signal ? { signal } : {}) },
  );
}

suite('edge cluster over NATS', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const edge of edges.splice(0)) {
      await edge.cluster.close();
      edge.service.shutdown();
      edge.node.stop();
      edge.pool.close();
      edge.events.close();
    }
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('shows every edge the whole pool, and spreads runs: local first, then forwarded to the owning edge', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.service.providers().every((provider) => provider.status === 'ready'));
    expect(b.service.providers().map((p) => [p.providerId, p.nodeId, p.status])).toEqual([
      ['pa', 'na', 'ready'],
      ['pb', 'nb', 'ready'],
    ]);
    // `nodes list`: every node of the fabric with its edge; listNodes() stays this edge's own.
    expect(a.service.fabricNodes().map((node) => [node.nodeId, node.edgeId])).toEqual([
      ['na', 'edge-a'],
      ['nb', 'edge-b'],
    ]);
    expect(a.service.listNodes().map((node) => node.nodeId)).toEqual(['na']);

    const handles = await Promise.all([submit(a, 'one'), submit(a, 'two')]);
    const streams = await Promise.all(handles.map(collect));
    const outcomes = await Promise.all(handles.map((handle) => handle.done));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['completed', 'completed']);
    expect(handles.map((handle) => handle.providerId).sort()).toEqual(['pa', 'pb']);
    const forwarded = streams[handles.findIndex((handle) => handle.providerId === 'pb')] ?? [];
    expect(forwarded.map((event) => event.part.type)).toEqual(['start', 'text-delta', 'complete']);
    expect(forwarded[1]?.part).toMatchObject({ type: 'text-delta' });
    // Each backend ran one run at a time: capacity 1 held across edges.
    expect(a.node.peak.get('pa')).toBe(1);
    expect(b.node.peak.get('pb')).toBe(1);
    expect(a.node.requests).toHaveLength(1);
    expect(b.node.requests).toHaveLength(1);
    // The forwarded run kept its id on the owner edge.
    expect(b.node.requests[0]?.runId).toBe(handles.find((handle) => handle.providerId === 'pb')?.runId);
    expect(a.service.inFlightRuns + b.service.inFlightRuns).toBe(0);
    await waitFor(() => a.cluster.forwardedRuns === 0 && b.cluster.servedRuns === 0);
    await a.cluster.publishState();
    await b.cluster.publishState();
    await waitFor(() => a.service.providers().every((p) => p.inFlight === 0 && p.queued === 0));
    expect(a.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    expect(b.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
    // Per-edge and cluster-wide figures on /metrics.
    const metricsA = await a.registry.metrics();
    expect(metricsA).toMatch(/^iop_cluster_edges 2$/m);
    expect(metricsA).toMatch(/^iop_cluster_capacity\{edge="edge-b"\} 1$/m);
    expect(metricsA).toMatch(/^iop_cluster_in_flight\{edge="edge-a"\} 0$/m);
    expect(metricsA).toMatch(/^iop_cluster_forwarded_runs_total\{to="edge-b"\} 1$/m);
    expect(await b.registry.metrics()).toMatch(/^iop_cluster_served_runs_total\{from="edge-a"\} 1$/m);
  });

  it('forwards a run in one message, and sends back its answer and one message per event batch, nothing more', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    const observer = await connect({ servers: nats.url });
    try {
      const subjects: string[] = [];
      observer.subscribe('>', {
        callback: (_error, msg) => {
          subjects.push(msg.subject);
        },
      });
      await observer.flush();
      const forwarded = await submit(a, 'counted');
      expect(forwarded.providerId).toBe('pb');
      expect((await collect(forwarded)).map((event) => event.part.type)).toEqual([
        'start',
        'text-delta',
        'complete',
      ]);
      expect(await forwarded.done).toMatchObject({ status: 'completed' });
      await a.cluster.publishState();
      await observer.flush();
      // The owner's answer and the events share the run's subject: the answer, then the start, the text and the
      // end (the scripted node sends them 80 ms apart: one batch each). No ack, no cancel, no limits or peer
      // call, no KV read; left out are only KV writes and their JetStream acks (the heartbeat's state and claims).
      const perRun = subjects.filter(
        (subject) => !subject.startsWith('$KV.') && !subject.startsWith('_INBOX.'),
      );
      expect(perRun.filter((subject) => subject === 'iop.run.edge-b')).toHaveLength(1);
      expect(perRun.filter((subject) => subject.startsWith('iop.events.edge-a.'))).toHaveLength(4);
      expect(perRun).toHaveLength(5);
    } finally {
      await observer.close();
      await local.cancel('test end');
    }
  });

  it('seals a forwarded run and its answers only with nonces each edge drew itself, made ahead', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    try {
      const forwarded = await submit(a, 'first');
      expect(forwarded.providerId).toBe('pb');
      await collect(forwarded);
      expect(await forwarded.done).toMatchObject({ status: 'completed' });
      // Both edges sealed with ciphers made ahead for their own nonces; no decipher was made ahead for a nonce
      // this edge chose for a peer (there is no such nonce any more).
      expect(await ciphers(a, 'seal', 'ahead')).toBeGreaterThan(0);
      expect(await ciphers(b, 'seal', 'ahead')).toBeGreaterThan(0);
      expect((await ciphers(a, 'open', 'ahead')) + (await ciphers(b, 'open', 'ahead'))).toBe(0);
    } finally {
      await local.cancel('test end');
    }
  });

  it('takes a cancel of a forwarded run only from the edge that forwarded it', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    const outsider = await connect({ servers: nats.url });
    // Another member of the fabric (it holds the key and knows edge-b's boot id).
    const member = await connectFabric(nats.url, 'edge-c', { peerBoot: (id) => a.cluster.view.bootOf(id) });
    try {
      const forwardIds: string[] = [];
      outsider.subscribe('iop.run.edge-b', {
        callback: (_error, msg) => {
          // The reply subject is in clear: iop.events.edge-a.<forward id>.
          if (msg.reply) forwardIds.push(msg.reply.slice(msg.reply.lastIndexOf('.') + 1));
        },
      });
      await outsider.flush();
      const forwarded = await submit(a, 'hold');
      expect(forwarded.providerId).toBe('pb');
      await waitFor(() => forwardIds.length === 1);
      member.publish('iop.cancel.edge-b', JSON.stringify({ forwardId: forwardIds[0], reason: 'not yours' }), {
        to: 'edge-b',
      });
      await member.flush();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(b.node.cancelled).toEqual([]);
      expect(b.cluster.servedRuns).toBe(1);
      // The edge that forwarded it still can.
      expect(await a.service.cancelRun(forwarded.runId, 'operator')).toBe(true);
      expect(await forwarded.done).toMatchObject({ status: 'cancelled' });
      expect(b.node.cancelled).toEqual([forwarded.runId]);
    } finally {
      await member.close();
      await outsider.close();
      await local.cancel('test end');
    }
  });

  it("ends what went to an edge's earlier life when its sealed state shows a new boot id", async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    const connection = await connect({ servers: nats.url });
    // As edge-b's next life would write it (sealed by edge-b, with the fabric key): the same state, a new boot id.
    const nextLife = await connectFabric(nats.url, 'edge-b');
    try {
      const forwarded = await submit(a, 'hold');
      expect(forwarded.providerId).toBe('pb');
      const events = collect(forwarded);
      const state = a.cluster.view.states()[0];
      expect(state?.bootId).toMatch(/^[0-9a-f]{32}$/);
      const edges = nextLife.kv(await new Kvm(connection).open('iop_edges'), 'iop_edges', 1000);
      await edges.put('edge-b', new TextEncoder().encode(JSON.stringify({ ...state, bootId: 'b0b0' })));
      expect(await forwarded.done).toMatchObject({ status: 'error' });
      expect((await events).at(-1)?.part).toMatchObject({ type: 'error', code: 'node_disconnected' });
      expect(a.cluster.view.bootOf('edge-b')).toBe('b0b0');
    } finally {
      await nextLife.close();
      await connection.close();
      await local.cancel('test end');
    }
  });

  it('carries a cancel and a client abort over to the owning edge', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    const forwarded = await submit(a, 'hold');
    expect(forwarded.providerId).toBe('pb');
    expect(await a.service.cancelRun(forwarded.runId, 'operator')).toBe(true);
    expect(await forwarded.done).toMatchObject({ status: 'cancelled' });
    expect(b.node.cancelled).toEqual([forwarded.runId]);

    const controller = new AbortController();
    const second = await submit(a, 'hold', controller.signal);
    expect(second.providerId).toBe('pb');
    controller.abort();
    expect(await second.done).toMatchObject({ status: 'cancelled' });
    await local.cancel();
    await local.done;
    await waitFor(() => a.cluster.forwardedRuns === 0 && b.cluster.servedRuns === 0);
    expect(b.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('ends runs forwarded to an edge that goes away with a well-formed error, and frees its slots', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1);
    const local = await holdLocalCapacity(a, b);
    const forwarded = await submit(a, 'hold');
    expect(forwarded.providerId).toBe('pb');
    const stream = collect(forwarded);
    await b.cluster.close();
    const outcome = await forwarded.done;
    expect(outcome).toMatchObject({ status: 'error', code: 'node_disconnected' });
    const events = await stream;
    expect(events.at(-1)?.part).toMatchObject({ type: 'error', code: 'node_disconnected' });
    // The owner cancelled what it ran for the requester.
    await waitFor(() => b.pool.totals().inFlight === 0);
    expect(a.cluster.forwardedRuns).toBe(0);
    await local.cancel();
    await local.done;
    expect(a.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('admits a run here once the edge it was placed on, silent, leaves the membership view', async () => {
    const a = await startEdge('edge-a', 'na');
    // An edge that published its state and then vanished without a word (its state not yet expired).
    a.cluster.view.update({
      edgeId: 'edge-ghost',
      nodes: ['nb'],
      nodeSummaries: [],
      providers: [
        {
          providerId: 'pb',
          nodeId: 'nb',
          status: 'ready',
          health: 'healthy',
          capacity: 1,
          inFlight: 0,
          queued: 0,
          servedModels: ['m1'],
          priority: 0,
        },
      ],
      configRevision: '',
      bootId: 'b0',
      sentAtUnixMs: Date.now(),
    });
    const first = await submit(a, 'hold');
    expect(first.providerId).toBe('pa');
    const second = submit(a, 'two');
    await waitFor(() => a.pool.totals().queued === 1);
    await first.cancel();
    const handle = await second;
    expect(handle.providerId).toBe('pa');
    expect(await handle.done).toMatchObject({ status: 'completed' });
    expect(a.cluster.forwardedRuns).toBe(0);
  });

  it('gives a node to the edge that claimed it last (compare-and-set on its owner key)', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    // nb reconnects to edge-a while edge-b still holds a link to it.
    a.connected.add('nb');
    a.events.publish({
      type: 'node',
      event: { kind: 'connected', nodeId: 'nb', alias: 'nb', reason: 'registered', atUnixMs: Date.now() },
    });
    await waitFor(() => b.dropped.includes('nb'));
    expect(a.dropped).toEqual([]);
    expect(b.connected.has('nb')).toBe(false);
  });

  it('drops what an outsider without the fabric key sends: forged runs and claims, replays, moved messages', async () => {
    const a = await startEdge('edge-a', 'na');
    const b = await startEdge('edge-b', 'nb');
    await waitFor(() => a.cluster.view.states().length === 1 && b.cluster.view.states().length === 1);
    const outsider = await connect({ servers: nats.url });
    try {
      const recorded: Msg[] = [];
      outsider.subscribe('>', {
        callback: (_error, msg) => {
          recorded.push(msg);
        },
      });
      await outsider.flush();
      // Fill pa so the next run is forwarded to edge-b, and record the whole forwarded run.
      const local = await holdLocalCapacity(a, b);
      const forwarded = await submit(a, 'secret prompt text');
      expect(forwarded.providerId).toBe('pb');
      expect(await forwarded.done).toMatchObject({ status: 'completed' });
      await outsider.flush();
      expect(b.node.requests).toHaveLength(1);
      expect(recorded.some((msg) => msg.subject === 'iop.run.edge-b')).toBe(true);
      for (const msg of recorded) {
        expect(Buffer.from(msg.data).includes(Buffer.from('secret prompt'))).toBe(false);
      }

      // Replay everything, as it was and moved to the other edge's subjects.
      for (const msg of recorded) {
        outsider.publish(msg.subject, msg.data, msg.reply ? { reply: msg.reply } : undefined);
        outsider.publish(msg.subject.replace('edge-b', 'edge-a'), msg.data);
      }
      // A forged forward in the old clear format, and a forged claim of nb for edge-a.
      outsider.publish(
        'iop.run.edge-b',
        new TextEncoder().encode(
          JSON.stringify({
            forwardId: 'x1',
            from: 'edge-a',
            destination: { kind: 'model', model: 'm' },
            spec: { session: { kind: 'slot', baseId: 'c' }, messages: [{ role: 'user', content: 'forged' }] },
            surface: 'openai',
          }),
        ),
        { reply: 'iop.events.edge-a.x1' },
      );
      const nodesKv = await new Kvm(outsider).open('iop_nodes');
      await nodesKv.put('nb', JSON.stringify({ edgeId: 'edge-a', claimedAtUnixMs: Date.now() + 60_000 }));
      await outsider.flush();
      await new Promise((resolve) => setTimeout(resolve, 300));

      expect(b.node.requests).toHaveLength(1);
      expect(a.node.requests).toHaveLength(1);
      expect(b.dropped).toEqual([]);
      expect(b.connected.has('nb')).toBe(true);
      const rejected = (registry: Registry, reason: string) =>
        registry.metrics().then((text) => {
          const match = new RegExp(`^iop_cluster_rejected_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
            text,
          );
          return Number(match?.[1] ?? -1);
        });
      expect(await rejected(b.registry, 'replay')).toBeGreaterThan(0);
      // Messages moved to the other edge's subjects fail authentication wherever they land.
      expect(
        (await rejected(a.registry, 'auth_failed')) + (await rejected(b.registry, 'auth_failed')),
      ).toBeGreaterThan(0);
      expect(await rejected(b.registry, 'malformed')).toBeGreaterThan(0);

      // The fabric still forwards.
      const again = await submit(a, 'after');
      expect(again.providerId).toBe('pb');
      expect(await again.done).toMatchObject({ status: 'completed' });
      expect(b.node.requests).toHaveLength(2);
      await local.cancel();
      await local.done;
    } finally {
      await outsider.close();
    }
  });
});
