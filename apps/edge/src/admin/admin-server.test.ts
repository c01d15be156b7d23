import { afterEach, describe, expect, it } from '@jest/globals';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import {
  create,
  EdgeAdminClient,
  ListNodesRequest,
  RefreshConfigResponse,
  type RefreshConfigResponse as Refresh,
} from '@iop/wire';
import type { PooledProviderStatus } from './admin-mapping.js';
import { silentLogger } from '../logging.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { createSelfSignedCertificate } from '../tls/self-signed-certificate.js';
import { createAdminClient, type AdminClient } from './admin-client.js';
import { systemClock } from '../clock.js';
import type { RefreshHandler } from './admin-handlers.js';
import {
  createAdminSurface,
  startAdminServer,
  type AdminServerOptions,
  type AdminSurface,
} from './admin-server.js';
import { AdminError } from './errors.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import { RefreshError } from '../refresh/errors.js';
import type { RefreshResult } from '../refresh/refresh-result.js';
import type { SurfaceFactory } from '../surface.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  service: FakeEdgeService;
  bus: FakeEventBus;
  surface: AdminSurface;
  client: AdminClient;
}

async function setup(
  overrides: Partial<AdminServerOptions> = {},
  clientToken: string | undefined = overrides.token,
): Promise<Setup> {
  const bus = new FakeEventBus();
  const service = FakeEdgeService.forConsole(bus);
  service.nodes = [node('test-node', 'alias-1')];
  const surface = await startAdminServer({
    listen: '127.0.0.1:0',
    service,
    events: bus,
    logger: silentLogger,
    clock: systemClock,
    closeGraceMs: 200,
    ...overrides,
  });
  cleanups.push(() => surface.close());
  const client = createAdminClient(
    { address: surface.address, token: clientToken, timeoutMs: 3000 },
    systemClock,
  );
  cleanups.push(() => client.close());
  return { service, bus, surface, client };
}

async function failure(promise: Promise<unknown>): Promise<AdminError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AdminError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pool: PooledProviderStatus[] = [
  {
    providerId: 'ollama-a',
    nodeId: 'test-node',
    status: 'ready',
    health: 'unknown',
    capacity: 2,
    inFlight: 1,
    queued: 3,
    servedModels: ['llama3.2'],
    priority: 1,
    residentModels: ['llama3.2'],
    residentState: 'fresh',
  },
];

describe('admin API over gRPC', () => {
  it('lists nodes with pool status merged into their providers', async () => {
    const { service, client } = await setup({ providerStatus: () => pool });
    service.nodes[0] = {
      ...node('test-node', 'alias-1'),
      providers: [
        { providerId: 'ollama-a', health: 'healthy', detail: '', cause: '', checkedAtUnixMs: 1 },
        {
          providerId: 'unpooled',
          health: 'unreachable',
          detail: 'refused',
          cause: 'connection_refused',
          checkedAtUnixMs: 1,
        },
      ],
    };
    const nodes = await client.listNodes();
    expect(nodes).toHaveLength(1);
    expect(nodes[0]).toMatchObject({
      nodeId: 'test-node',
      alias: 'alias-1',
      agentVersion: '0.1.0',
      os: 'linux',
      arch: 'x64',
      hostname: 'test-node-host',
      remoteAddress: '127.0.0.1:50000',
      connectedSinceUnixMs: 1_700_000_000_000,
      lastHeartbeatUnixMs: 1_700_000_001_000,
      adapters: ['cli'],
    });
    expect(nodes[0]?.providers).toEqual([
      { ...pool[0], health: 'healthy', healthDetail: '', healthCause: '' },
      expect.objectContaining({
        providerId: 'unpooled',
        nodeId: 'test-node',
        health: 'unreachable',
        healthDetail: 'refused',
        healthCause: 'connection_refused',
        capacity: 0,
      }),
    ]);
  });

  it('lists providers from the injected source, or none', async () => {
    expect(await (await setup()).client.listProviders()).toEqual([]);
    const { service, client } = await setup({ providerStatus: () => pool });
    expect(await client.listProviders()).toEqual(
      pool.map((entry) => ({ ...entry, healthDetail: '', healthCause: '' })),
    );
    // With the node's last probe of the provider: its detail and cause.
    service.nodes[0] = {
      ...node('test-node', 'alias-1'),
      providers: [
        {
          providerId: 'ollama-a',
          health: 'unreachable',
          detail: 'cannot reach http://127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9',
          cause: 'connection_refused',
          checkedAtUnixMs: 1,
        },
      ],
    };
    expect(await client.listProviders()).toEqual([
      {
        ...pool[0],
        healthDetail: 'cannot reach http://127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9',
        healthCause: 'connection_refused',
      },
    ]);
  });

  it('streams a submitted run until its terminal event', async () => {
    const { service, client } = await setup();
    const events = await collect(
      client.submitRun({
        node: 'alias-1',
        run: {
          runId: 'admin-run-1',
          adapter: 'cli',
          target: 'fake-cli',
          sessionId: 'default',
          messages: [create.chatMessage({ role: 'user', content: 'token iop_admin' })],
          timeoutMs: 5000,
        },
      }),
    );
    expect(service.runs[0]?.input).toMatchObject({
      node: 'alias-1',
      runId: 'admin-run-1',
      adapter: 'cli',
      target: 'fake-cli',
      sessionId: 'default',
      background: false,
      timeoutMs: 5000,
      workspace: undefined,
    });
    expect(events.map((event) => event.nodeId)).toEqual([
      'test-node',
      'test-node',
      'test-node',
      'test-node',
      'test-node',
    ]);
    expect(events.map((event) => event.event?.event?.$case)).toEqual([
      'start',
      'textDelta',
      'textDelta',
      'textDelta',
      'complete',
    ]);
    expect(events.map((event) => event.event?.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events.every((event) => event.event?.runId === 'admin-run-1')).toBe(true);
    const last = events.at(-1)?.event?.event;
    expect(last?.$case === 'complete' && last.complete.detail).toBe('idle-timeout');
  });

  it('cancels the run when the client cancels the stream', async () => {
    const { service, client, surface } = await setup();
    service.script = (run) => run.emit({ type: 'start', sessionId: 's', adapter: 'cli', target: 't' });
    const controller = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of client.submitRun(
        { run: { adapter: 'cli', target: 't', sessionId: 's' } },
        { signal: controller.signal },
      )) {
        seen.push(event.event?.event?.$case ?? '');
        controller.abort();
      }
    })();
    await reading;
    expect(seen).toEqual(['start']);
    await until(() => (service.runs[0]?.cancelReasons.length ?? 0) > 0, 'the run to be cancelled');
    expect(service.runs[0]?.cancelReasons[0]).toBe('client-disconnected');
    expect(surface.address).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('maps service errors to gRPC statuses with the edge error code', async () => {
    const { service, client } = await setup();
    let error = await failure(collect(client.submitRun({ node: 'nope', run: { adapter: 'cli' } })));
    expect(error).toMatchObject({
      code: 'call_failed',
      grpcCode: status.NOT_FOUND,
      serviceCode: 'node_not_found',
    });
    expect(error.message).toBe('node nope is not connected');
    service.nodes = [];
    error = await failure(client.terminateSession({ adapter: 'cli', target: 't', sessionId: 's' }));
    expect(error).toMatchObject({
      code: 'unavailable',
      grpcCode: status.UNAVAILABLE,
      serviceCode: 'no_nodes',
    });
    service.nodes = [node('a'), node('b')];
    error = await failure(
      client.nodeCommand(undefined, create.nodeCommandRequest({ command: 'capabilities' })),
    );
    expect(error).toMatchObject({ grpcCode: status.FAILED_PRECONDITION, serviceCode: 'node_ambiguous' });
    service.submitError = new Error('boom');
    error = await failure(collect(client.submitRun({ node: 'a', run: { adapter: 'cli' } })));
    expect(error).toMatchObject({ grpcCode: status.INTERNAL, serviceCode: 'internal', message: 'boom' });
    error = await failure(collect(client.submitRun({ node: 'a', run: undefined as never })));
    expect(error).toMatchObject({ grpcCode: status.INVALID_ARGUMENT, serviceCode: 'invalid_request' });
  });

  it('cancels runs, terminates sessions and relays node commands', async () => {
    const { service, client } = await setup();
    service.script = () => undefined;
    const stream = client.submitRun({ run: { runId: 'r-9', adapter: 'cli', target: 't', sessionId: 's' } });
    const reading = collect(stream);
    await until(() => service.runs.length === 1, 'the run to start');
    expect(await client.cancelRun('r-9')).toBe(true);
    expect((await reading).map((event) => event.event?.event?.$case)).toEqual(['cancelled']);
    expect(await client.cancelRun('r-9')).toBe(false);
    expect(service.cancelRunCalls).toEqual([
      { runId: 'r-9', reason: 'cancelled by admin API' },
      { runId: 'r-9', reason: 'cancelled by admin API' },
    ]);
    expect(await failure(client.cancelRun(''))).toMatchObject({ grpcCode: status.INVALID_ARGUMENT });

    expect(
      await client.terminateSession({ node: 'alias-1', adapter: 'cli', target: 't', sessionId: 's' }),
    ).toBe('test-node');
    expect(service.terminated).toEqual([{ node: 'alias-1', adapter: 'cli', target: 't', sessionId: 's' }]);

    service.commandResponses.set(
      'capabilities',
      create.nodeCommandResponse({ ok: true, result: { adapter: 'cli', max_concurrency: '4' } }),
    );
    const response = await client.nodeCommand(
      'test-node',
      create.nodeCommandRequest({ command: 'capabilities', adapter: 'cli', target: 't' }),
    );
    expect(response).toEqual(
      create.nodeCommandResponse({ ok: true, result: { adapter: 'cli', max_concurrency: '4' } }),
    );
    expect(service.commands[0]).toMatchObject({
      node: 'test-node',
      request: { command: 'capabilities', target: 't' },
    });
    expect(
      await failure(client.nodeCommand('test-node', create.nodeCommandRequest({ command: '' }))),
    ).toMatchObject({ grpcCode: status.INVALID_ARGUMENT });
  });

  it('watches node events, and run events only when asked', async () => {
    const { bus, client, service } = await setup();
    const nodesOnly = new AbortController();
    const all = new AbortController();
    const nodeEvents: string[] = [];
    const allEvents: string[] = [];
    const watchNodes = (async () => {
      for await (const event of client.watchEvents({ signal: nodesOnly.signal })) {
        nodeEvents.push(
          event.event?.$case === 'node' ? `${event.event.node.kind}:${event.event.node.reason}` : 'run',
        );
      }
    })();
    const watchAll = (async () => {
      for await (const event of client.watchEvents({ includeRunEvents: true, signal: all.signal })) {
        allEvents.push(event.event?.$case === 'run' ? `run:${event.event.run.event?.event?.$case}` : 'node');
      }
    })();
    await until(() => bus.subscriptions.size === 2, 'both watchers to subscribe');
    await collect(client.submitRun({ run: { adapter: 'cli', target: 't', sessionId: 's' } }));
    bus.publish({
      type: 'node',
      event: {
        kind: 'disconnected',
        nodeId: 'test-node',
        alias: 'alias-1',
        reason: 'heartbeat-timeout',
        atUnixMs: 5,
      },
    });
    await until(() => nodeEvents.length === 1 && allEvents.length === 6, 'the events to arrive');
    expect(nodeEvents).toEqual(['disconnected:heartbeat-timeout']);
    expect(allEvents).toEqual([
      'run:start',
      'run:textDelta',
      'run:textDelta',
      'run:textDelta',
      'run:complete',
      'node',
    ]);
    expect(service.runs).toHaveLength(1);
    nodesOnly.abort();
    all.abort();
    await Promise.all([watchNodes, watchAll]);
    await until(() => bus.subscriptions.size === 0, 'the subscriptions to be released');
  });

  it('answers UNAVAILABLE for RefreshConfig unless a handler is injected and refresh is enabled', async () => {
    const disabled = await failure(
      (await setup()).client.refreshConfig({ mode: 'apply', configYaml: 'x', configPath: '/p' }),
    );
    expect(disabled).toMatchObject({ code: 'unavailable', grpcCode: status.UNAVAILABLE });
    expect(disabled.message).toBe('config refresh is disabled');

    const calls: string[][] = [];
    const refreshHandler: RefreshHandler = (mode, yaml, path) => {
      calls.push([mode, yaml, path]);
      return Promise.resolve(
        RefreshConfigResponse.fromPartial({ status: 'applied', mode, changedNodes: ['n1'] }),
      );
    };
    const result: Refresh = await (
      await setup({ refreshHandler })
    ).client.refreshConfig({
      mode: 'dry-run',
      configYaml: 'edge: {}',
      configPath: '/etc/iop/edge.yaml',
    });
    expect(result).toMatchObject({ status: 'applied', mode: 'dry-run', changedNodes: ['n1'], reports: [] });
    expect(calls).toEqual([['dry-run', 'edge: {}', '/etc/iop/edge.yaml']]);

    const off = await setup({ refreshHandler, refreshEnabled: false });
    expect(
      await failure(off.client.refreshConfig({ mode: 'apply', configYaml: '', configPath: '' })),
    ).toMatchObject({
      grpcCode: status.UNAVAILABLE,
    });
    expect(calls).toHaveLength(1);
  });

  it('refuses a call whose :authority is not this listener, before its token is checked', async () => {
    const token = 'admin-secret-token';
    const { surface, service } = await setup({ token, allowedHosts: ['admin.example.com'] });
    const port = surface.address.split(':').pop() ?? '';
    const call = (authority: string | undefined) =>
      new Promise<{ code: number; errorCode: unknown }>((resolve) => {
        const raw = new EdgeAdminClient(
          surface.address,
          credentials.createInsecure(),
          authority ? { 'grpc.default_authority': authority } : {},
        );
        const metadata = new Metadata();
        metadata.set('authorization', `Bearer ${token}`);
        raw.listNodes(
          ListNodesRequest.fromPartial({}),
          metadata,
          { deadline: new Date(Date.now() + 3000) },
          (error: ServiceError | null) => {
            raw.close();
            resolve({ code: error?.code ?? status.OK, errorCode: error?.metadata.get('iop-error-code')[0] });
          },
        );
      });
    expect(await call(`rebind.evil.example:${port}`)).toEqual({
      code: status.PERMISSION_DENIED,
      errorCode: 'host_not_allowed',
    });
    expect((await call('127.0.0.1:1')).code).toBe(status.PERMISSION_DENIED);
    expect((await call(`localhost:${port}`)).code).toBe(status.OK);
    expect((await call('admin.example.com')).code).toBe(status.OK);
    expect((await call(undefined)).code).toBe(status.OK);
    expect(service.runs).toHaveLength(0);
  });

  it('requires the bearer token on every call when one is configured', async () => {
    const token = 'admin-secret-token';
    const { client, service } = await setup({ token });
    expect(await client.listNodes()).toHaveLength(1);

    for (const wrong of [undefined, 'admin-secret-tokeN', 'x']) {
      const other = createAdminClient(
        { address: (await setupAddress(token)).address, token: wrong },
        systemClock,
      );
      cleanups.push(() => other.close());
      expect(await failure(other.listNodes())).toMatchObject({
        code: 'unauthenticated',
        grpcCode: status.UNAUTHENTICATED,
      });
      expect(
        await failure(collect(other.submitRun({ run: { adapter: 'cli', target: 't', sessionId: 's' } }))),
      ).toMatchObject({ code: 'unauthenticated' });
      expect(await failure(collect(other.watchEvents()))).toMatchObject({ code: 'unauthenticated' });
    }
    expect(service.runs).toHaveLength(0);
  });

  it('refuses a non-loopback listen address without a token', async () => {
    const bus = new FakeEventBus();
    const base = {
      service: FakeEdgeService.forConsole(bus),
      events: bus,
      logger: silentLogger,
      clock: systemClock,
    };
    for (const listen of ['0.0.0.0:0', '[::]:0', '192.0.2.10:19093']) {
      await expect(startAdminServer({ ...base, listen })).rejects.toMatchObject({ code: 'insecure_listen' });
    }
    await expect(startAdminServer({ ...base, listen: 'nonsense' })).rejects.toMatchObject({
      code: 'invalid_listen',
    });
    // A token beyond loopback needs TLS: it must not cross the network in clear.
    await expect(startAdminServer({ ...base, listen: '0.0.0.0:0', token: 't0ken' })).rejects.toMatchObject({
      code: 'insecure_listen',
      message: expect.stringContaining('enable edge.tls'),
    });
  });

  it('beyond loopback serves TLS with the edge certificate: a pinned client works, plaintext and other keys fail', async () => {
    const bus = new FakeEventBus();
    const service = FakeEdgeService.forConsole(bus);
    service.nodes = [node('test-node', 'alias-1')];
    const identity = createSelfSignedCertificate({ commonName: 'edge', hosts: ['localhost'] });
    const tls = { cert: Buffer.from(identity.certificatePem), key: Buffer.from(identity.privateKeyPem) };
    const surface = await startAdminServer({
      listen: '0.0.0.0:0',
      token: 't0ken',
      tls,
      service,
      events: bus,
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 200,
    });
    cleanups.push(() => surface.close());
    const address = `127.0.0.1:${surface.address.split(':').pop()}`;
    const pinned = createAdminClient(
      {
        address,
        token: 't0ken',
        timeoutMs: 3000,
        tls: { ca: tls.cert, fingerprint: identity.fingerprint },
      },
      systemClock,
    );
    cleanups.push(() => pinned.close());
    expect((await pinned.listNodes()).map((info) => info.nodeId)).toEqual(['test-node']);

    const plaintext = createAdminClient({ address, token: 't0ken', timeoutMs: 3000 }, systemClock);
    cleanups.push(() => plaintext.close());
    expect((await failure(plaintext.listNodes())).code).toBe('unreachable');

    const other = createSelfSignedCertificate({ commonName: 'other', hosts: ['localhost'] });
    const wrongPin = createAdminClient(
      {
        address,
        token: 't0ken',
        timeoutMs: 3000,
        tls: { ca: tls.cert, fingerprint: other.fingerprint },
      },
      systemClock,
    );
    cleanups.push(() => wrongPin.close());
    expect((await failure(wrongPin.listNodes())).code).toBe('unreachable');
  });

  it('reports an unreachable edge clearly', async () => {
    const { surface } = await setup();
    const address = surface.address;
    await surface.close();
    const client = createAdminClient({ address, timeoutMs: 3000 }, systemClock);
    cleanups.push(() => client.close());
    const error = await failure(client.listNodes());
    expect(error.code).toBe('unreachable');
    expect(error.message).toMatch(
      new RegExp(`^cannot reach the edge admin API at ${address.replace(/\./g, '\\.')}: `),
    );
    expect(error.message).not.toMatch(/Resolution note/);
  });

  it('ends open streams with UNAVAILABLE when it closes', async () => {
    const { client, surface, bus } = await setup();
    const watching = failure(collect(client.watchEvents()));
    await until(() => bus.subscriptions.size === 1, 'the watcher to subscribe');
    await surface.close();
    expect(await watching).toMatchObject({ grpcCode: status.UNAVAILABLE, serviceCode: 'shutting_down' });
    expect(bus.subscriptions.size).toBe(0);
  });

  it('starts as a surface on refresh.listen, or not at all without one', async () => {
    const bus = new FakeEventBus();
    const context = {
      service: FakeEdgeService.forConsole(bus),
      events: bus,
      logger: silentLogger,
      clock: systemClock,
      refresher: undefined,
    };
    const factory = createAdminSurface({ closeGraceMs: 100 });
    expect(
      await factory({ ...context, config: { refresh: { enabled: true, listen: '', admin_token: '' } } }),
    ).toBe(undefined);
    const surface = await factory({
      ...context,
      config: { refresh: { enabled: true, listen: '127.0.0.1:0', admin_token: '' } },
    });
    if (!surface) throw new Error('expected a surface');
    cleanups.push(() => surface.close());
    expect(surface.name).toBe('admin');
    const client = createAdminClient({ address: surface.address }, systemClock);
    cleanups.push(() => client.close());
    expect(await client.listNodes()).toEqual([]);
  });
});

async function setupAddress(token: string): Promise<AdminSurface> {
  return (await setup({ token })).surface;
}

/** A ConfigRefresher answering each refresh with the next scripted result or error. */
function fakeRefresher(answers: (RefreshResult | Error)[]): ConfigRefresher & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    applied: 0,
    current: () => {
      throw new Error('not used');
    },
    refresh: (mode, yaml, path) => {
      calls.push([mode, yaml, path]);
      const answer = answers.shift();
      if (!answer) return Promise.reject(new Error('no scripted answer'));
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
    close: () => undefined,
  };
}

describe('admin surface wiring', () => {
  it('is a SurfaceFactory over the core: providers from service.providers() per call, RefreshConfig through the refresher', async () => {
    const bus = new FakeEventBus();
    const service = FakeEdgeService.forConsole(bus);
    const refresher = fakeRefresher([
      {
        status: 'applied',
        mode: 'apply',
        changed_nodes: ['n1'],
        changed_providers: [],
        changed_models: [],
        reports: [],
        node_results: [],
      },
      new RefreshError('refresh_busy', 'another refresh is running'),
      new RefreshError('refresh_closed', 'the edge is shutting down'),
    ]);
    const factory = createAdminSurface({ closeGraceMs: 100 });
    // The runtime hands every factory the whole core; the admin surface declares the part it uses.
    const asSurfaceFactory: SurfaceFactory = factory;
    expect(asSurfaceFactory).toBe(factory);
    const surface = await factory({
      config: { refresh: { enabled: true, listen: '127.0.0.1:0', admin_token: '' } },
      service,
      events: bus,
      logger: silentLogger,
      clock: systemClock,
      refresher,
    });
    if (!surface) throw new Error('expected a surface');
    cleanups.push(() => surface.close());
    const client = createAdminClient({ address: surface.address }, systemClock);
    cleanups.push(() => client.close());
    expect(await client.listProviders()).toEqual([]);
    // Read from the service at call time (a live refresh changes the pool under a running surface).
    service.providerList = [
      {
        providerId: 'ollama-a',
        nodeId: 'test-node',
        status: 'ready',
        health: 'unknown',
        capacity: 2,
        inFlight: 1,
        queued: 3,
        servedModels: ['llama3.2'],
        priority: 1,
        residentModels: ['llama3.2'],
        residentState: 'fresh',
      },
    ];
    expect(await client.listProviders()).toEqual(
      pool.map((entry) => ({ ...entry, healthDetail: '', healthCause: '' })),
    );

    const request = { mode: 'apply', configYaml: 'y', configPath: 'p' };
    expect(await client.refreshConfig(request)).toMatchObject({
      status: 'applied',
      mode: 'apply',
      changedNodes: ['n1'],
    });
    expect(refresher.calls).toEqual([['apply', 'y', 'p']]);
    // Failures without a result become gRPC statuses: busy → ABORTED, closing → UNAVAILABLE.
    expect(await failure(client.refreshConfig(request))).toMatchObject({
      grpcCode: status.ABORTED,
      serviceCode: 'refresh_busy',
    });
    expect(await failure(client.refreshConfig(request))).toMatchObject({
      grpcCode: status.UNAVAILABLE,
      serviceCode: 'refresh_closed',
    });
  });

  it('answers that refresh is disabled when the runtime has no refresher', async () => {
    const bus = new FakeEventBus();
    const surface = await createAdminSurface({ closeGraceMs: 100 })({
      config: { refresh: { enabled: true, listen: '127.0.0.1:0', admin_token: '' } },
      service: FakeEdgeService.forConsole(bus),
      events: bus,
      logger: silentLogger,
      clock: systemClock,
      refresher: undefined,
    });
    if (!surface) throw new Error('expected a surface');
    cleanups.push(() => surface.close());
    const client = createAdminClient({ address: surface.address }, systemClock);
    cleanups.push(() => client.close());
    const refused = await failure(client.refreshConfig({ mode: 'apply', configYaml: 'y', configPath: 'p' }));
    expect(refused).toMatchObject({ grpcCode: status.UNAVAILABLE });
    expect(refused.message).toBe('config refresh is disabled');
  });
});
