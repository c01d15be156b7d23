import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startEdgeRuntime, type EdgeCore } from './edge-runtime.js';
import { silentLogger } from './logging.js';
import { create, envelope as build } from '@iop/wire';
import { testEdgeConfig, testNode } from './node/test-support/config-fixture.js';
import { modelConfig } from './pool/test-support/pool-fixture.js';
import type { EdgeEvent, EventSubscription } from './events/types.js';
import type { RunSpec } from './service/types.js';
import type { SurfaceFactory } from './surface.js';
import { parseListenAddress } from './net/listen-address.js';
import { connectFakeNode, waitUntil } from './transport/test-support/fake-node.js';

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-runtime-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function canConnect(address: string): Promise<boolean> {
  const { host, port } = parseListenAddress(address);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describe('startEdgeRuntime', () => {
  it('starts surfaces in order over the typed core and stops them in reverse before the transport', async () => {
    const order: string[] = [];
    let seen: EdgeCore | undefined;
    const readyDuringStart: boolean[] = [];
    const surface =
      (name: string): SurfaceFactory =>
      (core) => {
        seen = core;
        order.push(`start ${name}`);
        readyDuringStart.push(core.ready());
        return Promise.resolve({
          name,
          address: `${name}://`,
          close: () => {
            order.push(`close ${name}`);
            return Promise.resolve();
          },
        });
      };
    const runtime = await startEdgeRuntime({
      config: testEdgeConfig({ edge: { data_dir: dataDir } }),
      configPath: '/etc/iop/edge.yaml',
      logger: silentLogger,
      surfaces: [surface('a'), () => Promise.resolve(undefined), surface('b')],
    });
    expect(runtime.surfaces.map((entry) => entry.name)).toEqual(['a', 'b']);
    // Every surface gets the same long-lived objects the runtime exposes.
    expect(seen?.service).toBe(runtime.service);
    expect(seen?.registry).toBe(runtime.registry);
    expect(seen?.pool).toBe(runtime.pool);
    expect(seen?.events).toBe(runtime.events);
    expect(seen?.metrics).toBe(runtime.metrics);
    expect(seen?.clock).toBe(runtime.clock);
    expect(seen?.configPath).toBe('/etc/iop/edge.yaml');
    expect(seen?.store).toBe(runtime.store);
    // refresh.enabled is false in the test config: no refresher.
    expect(seen?.refresher).toBeUndefined();
    // Not ready while surfaces are still starting; ready once all started.
    expect(readyDuringStart).toEqual([false, false]);
    expect(runtime.ready()).toBe(true);

    const { token } = await runtime.store.register('test-node');
    const node = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
    expect(node.response.accepted).toBe(true);
    await Promise.all([runtime.stop(), runtime.stop()]);
    expect(runtime.ready()).toBe(false);
    expect(order).toEqual(['start a', 'start b', 'close b', 'close a']);
    expect((await node.connection.closed).reason).toBe('shutdown');
    expect(await canConnect(runtime.transportAddress)).toBe(false);
    await expect(
      runtime.service.submitRun(
        { kind: 'route', adapter: 'cli', target: 't' },
        { session: { kind: 'fixed', sessionId: 's' }, messages: [] },
        { surface: 'console' },
      ),
    ).rejects.toMatchObject({
      code: 'shutting_down',
    });
  });

  it('replays to a surface that subscribes while starting, and keeps nothing for replay once all have started', async () => {
    const connected = (nodeId: string): EdgeEvent => ({
      type: 'node',
      event: { kind: 'connected', nodeId, alias: nodeId, reason: 'registered', atUnixMs: 0 },
    });
    let fromStart: EventSubscription | undefined;
    const runtime = await startEdgeRuntime({
      config: testEdgeConfig({ edge: { data_dir: dataDir } }),
      configPath: '/etc/iop/edge.yaml',
      logger: silentLogger,
      surfaces: [
        (core) => {
          core.events.publish(connected('before-dashboard'));
          return Promise.resolve(undefined);
        },
        (core) => {
          fromStart = core.events.subscribe({ replay: true });
          return Promise.resolve(undefined);
        },
      ],
    });
    try {
      runtime.events.publish(connected('after-start'));
      const late = runtime.events.subscribe({ replay: true });
      runtime.events.publish(connected('live'));
      const first = async (subscription: EventSubscription, count: number): Promise<string[]> => {
        const seen: string[] = [];
        for await (const event of subscription) {
          if (event.type === 'node') seen.push(event.event.nodeId);
          if (seen.length === count) break;
        }
        return seen;
      };
      expect(await first(fromStart!, 3)).toEqual(['before-dashboard', 'after-start', 'live']);
      expect(await first(late, 1)).toEqual(['live']);
    } finally {
      await runtime.stop();
    }
  });

  it('counts admission on the shared metrics: provider dispatches and rejections, runs by surface', async () => {
    const node = testNode();
    const [provider] = node.providers;
    if (!provider) throw new Error('config fixture lost its provider');
    const runtime = await startEdgeRuntime({
      config: {
        ...testEdgeConfig({
          edge: { data_dir: dataDir },
          nodes: [{ ...node, providers: [{ ...provider, capacity: 1, max_queue: 0 }] }],
        }),
        models: [modelConfig('llama', { [provider.id]: 'llama3.2' })],
      },
      configPath: 'x',
      logger: silentLogger,
      surfaces: [],
    });
    try {
      const { token } = await runtime.store.register('test-node');
      const fake = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
      await waitUntil(() => runtime.registry.size === 1, 2000, 'registered');
      const spec: RunSpec = {
        session: { kind: 'slot', baseId: 'openai' },
        messages: [create.chatMessage({ role: 'user', content: 'hi' })],
      };
      const first = await runtime.service.submitRun({ kind: 'model', model: 'llama' }, spec, {
        surface: 'openai',
      });
      expect(first).toMatchObject({ nodeId: 'test-node', providerId: provider.id, target: 'llama3.2' });
      await fake.waitFor('runRequest');
      // Capacity 1 and no queue: the second run is refused at once.
      await expect(
        runtime.service.submitRun({ kind: 'model', model: 'llama' }, spec, { surface: 'openai' }),
      ).rejects.toMatchObject({ code: 'queue_full' });
      // An explicit route matching no provider counts for its surface but no provider.
      await runtime.service.submitRun(
        { kind: 'route', adapter: 'cli', target: 'fake-cli' },
        { session: { kind: 'fixed', sessionId: 'default' }, messages: spec.messages },
        { surface: 'console' },
      );
      const { body } = await runtime.metrics.render();
      expect(body).toContain(`iop_provider_dispatches_total{provider="${provider.id}",node="test-node"} 1`);
      expect(body).toContain('iop_provider_rejections_total{model="llama",reason="queue_full"} 1');
      expect(body).toContain('iop_runs_admitted_total{surface="openai"} 1');
      expect(body).toContain('iop_runs_admitted_total{surface="console"} 1');
      expect(body).toContain('iop_runs_rejected_total{surface="openai",reason="queue_full"} 1');
      expect(body).toContain('iop_node_in_flight{node="test-node"} 2');
      expect(runtime.pool.totals()).toEqual({ inFlight: 2, queued: 0 });
    } finally {
      await runtime.stop();
    }
    // Stopping ends the in-flight runs with their node and releases their capacity.
    expect(runtime.pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('stops what it started and rethrows when a surface fails to start', async () => {
    const closed: string[] = [];
    let surfaceSawContext = false;
    const error = await startEdgeRuntime({
      config: testEdgeConfig({ edge: { data_dir: dataDir } }),
      configPath: 'x',
      logger: silentLogger,
      surfaces: [
        (core) => {
          surfaceSawContext = core.registry.size === 0;
          return Promise.resolve({
            name: 'ok',
            address: 'ok://',
            close: () => {
              closed.push('ok');
              return Promise.resolve();
            },
          });
        },
        () => Promise.reject(new Error('port in use')),
      ],
    }).catch((caught: unknown) => caught);
    expect(error).toEqual(new Error('port in use'));
    expect(surfaceSawContext).toBe(true);
    expect(closed).toEqual(['ok']);
  });

  it('fails with a typed error when the transport cannot listen', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = address !== null && typeof address !== 'string' ? address.port : 0;
    try {
      await expect(
        startEdgeRuntime({
          config: testEdgeConfig({ edge: { data_dir: dataDir, listen: `127.0.0.1:${port}` } }),
          configPath: 'x',
          logger: silentLogger,
          surfaces: [],
        }),
      ).rejects.toMatchObject({ name: 'TransportError', code: 'listen_failed' });
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('pushes a changed node configuration to connected nodes and gives it to later registrations', async () => {
    const base = testEdgeConfig({ edge: { data_dir: dataDir } });
    const runtime = await startEdgeRuntime({
      config: base,
      configPath: 'x',
      logger: silentLogger,
      surfaces: [],
    });
    try {
      const { token } = await runtime.store.register('test-node');
      const node = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
      let accept = true;
      const answering = (async () => {
        for (let answered = 0; answered < 2; answered += 1) {
          await waitUntil(
            () =>
              node.frames.filter((frame) => frame.msg?.$case === 'nodeConfigRefreshRequest').length >
              answered,
            3000,
            'refresh request',
          );
          const request = node.frames.filter((frame) => frame.msg?.$case === 'nodeConfigRefreshRequest')[
            answered
          ];
          const revision =
            request?.msg?.$case === 'nodeConfigRefreshRequest'
              ? (request.msg.nodeConfigRefreshRequest.config?.revision ?? '')
              : '';
          await node.send(
            build.nodeConfigRefreshResult(request?.requestId ?? '', {
              revision,
              ok: accept,
              error: accept ? '' : 'bad adapter',
            }),
          );
        }
      })();
      const changed = {
        ...base,
        nodes: [
          testNode({ runtime: { ...testNode().runtime, max_concurrency: 9 } }),
          testNode({ id: 'offline-node', alias: 'offline' }),
        ],
      };
      const applied = (await runtime.applyNodeConfig(changed)).results;
      expect(applied.map((result) => [result.node_id, result.status])).toEqual([
        ['offline-node', 'not_connected'],
        ['test-node', 'applied'],
      ]);
      expect(runtime.registry.get('test-node')?.payload.maxConcurrency).toBe(9);
      expect(
        (await runtime.applyNodeConfig(changed)).results.find((result) => result.node_id === 'test-node')
          ?.status,
      ).toBe('unchanged');
      accept = false;
      const refused = await runtime.applyNodeConfig({
        ...base,
        nodes: [testNode({ runtime: { ...testNode().runtime, max_concurrency: 2 } })],
      });
      expect(refused.status).toBe('rejected');
      expect(refused.results).toHaveLength(1);
      expect(refused.results[0]).toMatchObject({
        node_id: 'test-node',
        status: 'failed',
        error: 'bad adapter',
      });
      expect(runtime.registry.get('test-node')?.payload.maxConcurrency).toBe(9);
      await answering;
      // All or nothing: the refused payload is not handed out to a node registering later either.
      const again = await connectFakeNode(runtime.transportAddress, { nodeId: 'test-node', token });
      expect(again.response.config?.maxConcurrency).toBe(9);
    } finally {
      await runtime.stop();
    }
  });
});
