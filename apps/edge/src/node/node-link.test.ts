import { ManualClock } from '@iop/clock';
import { describe, it, expect } from '@jest/globals';
import {
  create,
  ProviderHealth,
  ResidentState,
  toWireRunEvent,
  type Envelope,
  type RunEventEnvelope,
} from '@iop/wire';
import { silentLogger } from '../logging.js';
import { NodeLink, type RunObserver } from './node-link.js';
import { createNodeRegistry } from './node-registry.js';
import { defaultNodePayload, mapNodeConfig } from './mapper.js';
import { FakeChannel, linkInfo } from './test-support/fake-channel.js';
import { testNode } from './test-support/config-fixture.js';

function makeLink(nodeId = 'n1', channel = new FakeChannel()) {
  const clock = new ManualClock(5_000);
  const link = new NodeLink({
    channel,
    info: linkInfo(nodeId),
    payload: mapNodeConfig(testNode({ id: nodeId, alias: `${nodeId}-alias` })),
    logger: silentLogger,
    clock,
    requestTimeoutMs: 200,
  });
  return { link, channel, clock, advance: (ms: number) => clock.advance(ms) };
}

function recorder(): RunObserver & { events: RunEventEnvelope[]; closed: string[] } {
  const events: RunEventEnvelope[] = [];
  const closed: string[] = [];
  return {
    events,
    closed,
    onEvent: (event) => events.push(event),
    onLinkClosed: (reason) => closed.push(reason),
  };
}

function runEventEnvelope(runId: string, seq: number, part: Parameters<typeof toWireRunEvent>[2]): Envelope {
  return { requestId: '', msg: { $case: 'runEvent', runEvent: toWireRunEvent(runId, seq, part, 1) } };
}

describe('NodeLink', () => {
  it('sends a run request and routes its events by run id until the terminal event', async () => {
    const { link, channel } = makeLink();
    const first = recorder();
    const second = recorder();
    await link.startRun(create.runRequest({ runId: 'r1', adapter: 'cli' }), first);
    await link.startRun(create.runRequest({ runId: 'r2' }), second);
    expect(channel.ofKind('runRequest')).toHaveLength(2);
    link.handle(runEventEnvelope('r1', 1, { type: 'text-delta', text: 'a' }));
    link.handle(runEventEnvelope('r2', 1, { type: 'text-delta', text: 'b' }));
    link.handle(
      runEventEnvelope('r1', 2, { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 3 }),
    );
    link.handle(runEventEnvelope('r1', 3, { type: 'text-delta', text: 'late' }));
    expect(first.events.map((event) => event.part.type)).toEqual(['text-delta', 'complete']);
    expect(second.events.map((event) => event.part.type)).toEqual(['text-delta']);
    expect(link.inFlightRuns).toBe(1);
    await expect(link.startRun(create.runRequest({ runId: 'r2' }), recorder())).rejects.toMatchObject({
      code: 'duplicate_run',
    });
    link.releaseRun('r2');
    expect(link.inFlightRuns).toBe(0);
  });

  it('unregisters a run whose request could not be sent', async () => {
    const { link, channel } = makeLink();
    channel.failSends = true;
    await expect(link.startRun(create.runRequest({ runId: 'r1' }), recorder())).rejects.toMatchObject({
      code: 'send_failed',
    });
    expect(link.inFlightRuns).toBe(0);
  });

  it('correlates command responses by request id and relays lifecycle progress', async () => {
    const { link, channel } = makeLink();
    const progress: string[] = [];
    channel.onSend((envelope) => {
      if (envelope.msg?.$case !== 'nodeCommandRequest') return;
      const requestId = envelope.requestId;
      queueMicrotask(() => {
        link.handle({
          requestId,
          msg: {
            $case: 'providerLifecycleProgress',
            providerLifecycleProgress: {
              providerId: 'p',
              model: 'm',
              status: 'pulling',
              digest: '',
              total: 10,
              completed: 5,
            },
          },
        });
        link.handle({
          requestId,
          msg: {
            $case: 'nodeCommandResponse',
            nodeCommandResponse: create.nodeCommandResponse({
              ok: true,
              result: {
                echo:
                  envelope.msg?.$case === 'nodeCommandRequest' ? envelope.msg.nodeCommandRequest.command : '',
              },
            }),
          },
        });
      });
    });
    const [one, two] = await Promise.all([
      link.command(create.nodeCommandRequest({ command: 'capabilities' }), {
        onProgress: (entry) => progress.push(entry.status),
      }),
      link.command(create.nodeCommandRequest({ command: 'sessions' })),
    ]);
    expect(one.result).toEqual({ echo: 'capabilities' });
    expect(two.result).toEqual({ echo: 'sessions' });
    expect(progress).toEqual(['pulling']);
    expect(new Set(channel.sent.map((envelope) => envelope.requestId)).size).toBe(2);
    expect(link.pendingRequests).toBe(0);
  });

  it('times out a request the node never answers and ignores the late answer', async () => {
    const { link, channel, clock } = makeLink();
    const command = link.command(create.nodeCommandRequest({ command: 'status' }), { timeoutMs: 30 });
    expect(clock.pendingDelays()).toEqual([30]);
    clock.advance(30);
    await expect(command).rejects.toMatchObject({
      code: 'request_timeout',
      message: 'command status on node n1 timed out after 30 ms',
    });
    expect(link.pendingRequests).toBe(0);
    const requestId = channel.sent[0]?.requestId ?? '';
    link.handle({
      requestId,
      msg: { $case: 'nodeCommandResponse', nodeCommandResponse: create.nodeCommandResponse({}) },
    });
  });

  it('aborts a request when its signal aborts', async () => {
    const { link } = makeLink();
    const controller = new AbortController();
    const pending = link.command(create.nodeCommandRequest({ command: 'status' }), {
      signal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'request_aborted' });
    await expect(
      link.command(create.nodeCommandRequest({ command: 'status' }), { signal: controller.signal }),
    ).rejects.toMatchObject({ code: 'request_aborted' });
    expect(link.pendingRequests).toBe(0);
  });

  it('on disconnect rejects every pending request, tells every run observer, and refuses new work', async () => {
    const { link } = makeLink();
    const run = recorder();
    await link.startRun(create.runRequest({ runId: 'r1' }), run);
    const pending = link.command(create.nodeCommandRequest({ command: 'sessions' }), { timeoutMs: 10_000 });
    const refresh = link.refreshConfig(defaultNodePayload('n1'), { timeoutMs: 10_000 });
    const closedReasons: string[] = [];
    link.onClosed((reason) => closedReasons.push(reason));
    link.markClosed('heartbeat-timeout');
    link.markClosed('again');
    await expect(pending).rejects.toMatchObject({ code: 'link_closed' });
    await expect(refresh).rejects.toMatchObject({ code: 'link_closed' });
    expect(run.closed).toEqual(['heartbeat-timeout']);
    expect(closedReasons).toEqual(['heartbeat-timeout']);
    expect(link.inFlightRuns).toBe(0);
    expect(link.pendingRequests).toBe(0);
    await expect(link.startRun(create.runRequest({ runId: 'r2' }), recorder())).rejects.toMatchObject({
      code: 'link_closed',
    });
    await expect(
      link.cancel({ action: 1, runId: 'r1', adapter: '', target: '', sessionId: '', reason: '' }),
    ).rejects.toMatchObject({
      code: 'link_closed',
    });
  });

  it('answers pings with pongs, records heartbeats and provider health', async () => {
    const { link, channel, advance } = makeLink();
    advance(1_000);
    link.handle({
      requestId: '',
      msg: { $case: 'heartbeatPing', heartbeatPing: { seq: 7, sentAtUnixMs: 0 } },
    });
    await Promise.resolve();
    expect(channel.ofKind('heartbeatPong')[0]?.msg).toMatchObject({ heartbeatPong: { seq: 7 } });
    expect(link.lastHeartbeatUnixMs).toBe(6_000);
    link.handle({
      requestId: '',
      msg: {
        $case: 'providerStatusReport',
        providerStatusReport: {
          providers: [
            {
              providerId: 'a',
              health: ProviderHealth.PROVIDER_HEALTH_HEALTHY,
              detail: '',
              cause: '',
              checkedAtUnixMs: 1,
              models: [],
              residentModels: ['llama3.2:latest'],
              residentState: ResidentState.RESIDENT_STATE_FRESH,
            },
            {
              providerId: 'b',
              health: ProviderHealth.PROVIDER_HEALTH_UNREACHABLE,
              detail: 'refused',
              cause: 'connection_refused',
              checkedAtUnixMs: 2,
              models: [],
              residentModels: ['qwen3:8b'],
              residentState: ResidentState.RESIDENT_STATE_UNSPECIFIED,
            },
          ],
        },
      },
    });
    const summary = link.summary();
    expect(summary.providers).toEqual([
      {
        providerId: 'a',
        health: 'healthy',
        detail: '',
        cause: '',
        checkedAtUnixMs: 1,
        resident: { models: ['llama3.2:latest'], state: 'fresh' },
      },
      {
        providerId: 'b',
        health: 'unreachable',
        detail: 'refused',
        cause: 'connection_refused',
        checkedAtUnixMs: 2,
      },
    ]);
    expect(summary).toMatchObject({
      nodeId: 'n1',
      alias: 'n1',
      adapters: ['cli', 'ollama'],
      lastHeartbeatUnixMs: 6_000,
    });
  });

  it('applies a refreshed payload only when the node accepts it', async () => {
    const { link, channel } = makeLink();
    channel.onSend((envelope) => {
      if (envelope.msg?.$case !== 'nodeConfigRefreshRequest') return;
      const revision = envelope.msg.nodeConfigRefreshRequest.config?.revision ?? '';
      const ok = envelope.msg.nodeConfigRefreshRequest.config?.nodeId === 'n1';
      queueMicrotask(() =>
        link.handle({
          requestId: envelope.requestId,
          msg: {
            $case: 'nodeConfigRefreshResult',
            nodeConfigRefreshResult: { revision, ok, error: ok ? '' : 'no' },
          },
        }),
      );
    });
    const accepted = defaultNodePayload('n1');
    await expect(link.refreshConfig(accepted)).resolves.toMatchObject({ ok: true });
    expect(link.payload).toBe(accepted);
    await expect(link.refreshConfig(defaultNodePayload('other'))).resolves.toMatchObject({ ok: false });
    expect(link.payload).toBe(accepted);
  });
});

describe('createNodeRegistry', () => {
  it('keeps one link per node id, reports the replaced one, and never evicts a replacement', () => {
    const registry = createNodeRegistry();
    const a1 = makeLink('a').link;
    const b = makeLink('b').link;
    const a2 = makeLink('a').link;
    expect(registry.add(a1)).toBeUndefined();
    expect(registry.add(b)).toBeUndefined();
    expect(registry.add(a2)).toBe(a1);
    expect(registry.size).toBe(2);
    expect(registry.links().map((link) => link.nodeId)).toEqual(['b', 'a']);
    expect(registry.remove(a1)).toBe(false);
    expect(registry.get('a')).toBe(a2);
    expect(registry.findByAlias('b')).toEqual([b]);
    expect(registry.list().map((summary) => summary.nodeId)).toEqual(['b', 'a']);
    expect(registry.remove(a2)).toBe(true);
    expect(registry.get('a')).toBeUndefined();
  });
});
