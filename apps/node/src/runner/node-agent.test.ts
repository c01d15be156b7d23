import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { envelope, fromWireRunEvent, type Envelope, type NodeConfigPayload } from '@iop/wire';
import { fakeProbeDeps } from '../discovery/test-support/fake-probe-deps.js';
import { SqliteRunHistory } from '../history/sqlite-run-history.js';
import { createDialer } from '../link/dial.js';
import { FakeEdge, waitFor } from '../link/test-support/fake-edge.js';
import { silentLogger } from '@iop/logging';
import { NodeAgent } from './node-agent.js';
import { adapterInstance, fakeFactory } from './test-support/fake-adapter.js';

function payload(fields: Partial<NodeConfigPayload> = {}): NodeConfigPayload {
  return {
    nodeId: 'test-node',
    alias: 'n0',
    maxConcurrency: 4,
    adapters: [adapterInstance('cli', 'cli')],
    providers: [],
    revision: 'rev-1',
    healthProbeIntervalMs: 60_000,
    ...fields,
  };
}

function messagesOf<K extends NonNullable<Envelope['msg']>['$case']>(edge: FakeEdge, kind: K): Envelope[] {
  return edge.received.filter((entry) => entry.message.msg?.$case === kind).map((entry) => entry.message);
}

describe('NodeAgent end to end against a fake edge', () => {
  let dir: string;
  let history: SqliteRunHistory;
  let edge: FakeEdge;
  let agent: NodeAgent;
  let factory: ReturnType<typeof fakeFactory>;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-agent-'));
    history = SqliteRunHistory.open({ path: path.join(dir, 'history.db') });
    edge = await FakeEdge.start({
      answer: () => ({
        accepted: true,
        edgeId: 'e',
        heartbeatIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        config: payload(),
      }),
    });
    factory = fakeFactory('cli');
    agent = new NodeAgent({
      nodeId: 'test-node',
      token: 'tok',
      agentVersion: '0.1.0',
      connect: createDialer({ host: '127.0.0.1', port: edge.port, connectTimeoutMs: 500 }),
      factories: { cli: factory },
      history,
      logger: silentLogger,
      retryIntervalMs: 40,
      maxRetries: 20,
      shutdownGraceMs: 500,
    });
  });

  afterEach(async () => {
    await agent.stop();
    await edge.close();
    await history.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function registered(): Promise<void> {
    void agent.run();
    await waitFor(() => agent.link.state === 'registered' && factory.built.length > 0, 3000, 'registration');
  }

  it('reports its supported adapters, applies the payload and runs a request from the edge', async () => {
    await registered();
    expect(edge.registrations[0].supportedAdapters).toEqual(['cli']);
    await waitFor(() => messagesOf(edge, 'providerStatusReport').length === 1, 2000, 'status report');
    await edge.latest().send(
      envelope.runRequest({
        runId: 'run-1',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        messages: [
          {
            role: 'user',
            content: 'IOP',
            toolCalls: [],
            toolCallId: '',
            name: '',
            images: [],
            imageUrls: [],
            reasoning: '',
          },
        ],
      }),
    );
    await waitFor(() => messagesOf(edge, 'runEvent').length === 4, 2000, 'run events');
    const parts = messagesOf(edge, 'runEvent').map((message) =>
      message.msg?.$case === 'runEvent' ? fromWireRunEvent(message.msg.runEvent)!.part.type : '',
    );
    expect(parts).toEqual(['start', 'text-delta', 'usage', 'complete']);
    await waitFor(() => history.list()[0]?.status === 'completed', 2000, 'history');
  });

  it('answers transport and capabilities commands under their request ids', async () => {
    await registered();
    await edge.latest().send(
      envelope.nodeCommandRequest('c-1', {
        command: 'transport',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
      }),
    );
    await edge.latest().send(
      envelope.nodeCommandRequest('c-2', {
        command: 'capabilities',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
      }),
    );
    await waitFor(() => messagesOf(edge, 'nodeCommandResponse').length === 2, 2000, 'responses');
    const byId = new Map(
      messagesOf(edge, 'nodeCommandResponse').map((message) => [message.requestId, message.msg]),
    );
    expect(byId.get('c-1')).toMatchObject({
      nodeCommandResponse: {
        ok: true,
        result: {
          adapter: 'cli',
          connected: 'true',
          node_id: 'test-node',
          session_id: 'default',
          state: 'connected',
          target: 'fake-cli',
        },
      },
    });
    expect(byId.get('c-2')).toMatchObject({
      nodeCommandResponse: {
        ok: true,
        result: { adapter: 'cli', max_concurrency: '4', targets: 'fake-cli' },
      },
    });
  });

  it('applies a config refresh (keeping unchanged adapters) and rejects a bad one with its error', async () => {
    await registered();
    const first = factory.built[0];
    await edge
      .latest()
      .send(envelope.nodeConfigRefreshRequest('f-1', payload({ revision: 'rev-2', maxConcurrency: 1 })));
    await edge
      .latest()
      .send(
        envelope.nodeConfigRefreshRequest(
          'f-2',
          payload({ revision: 'rev-3', adapters: [adapterInstance('x', 'ollama')] }),
        ),
      );
    await waitFor(() => messagesOf(edge, 'nodeConfigRefreshResult').length === 2, 2000, 'refresh results');
    const [ok, bad] = messagesOf(edge, 'nodeConfigRefreshResult');
    expect(ok).toMatchObject({
      requestId: 'f-1',
      msg: { nodeConfigRefreshResult: { revision: 'rev-2', ok: true, error: '' } },
    });
    expect(bad).toMatchObject({
      requestId: 'f-2',
      msg: { nodeConfigRefreshResult: { revision: 'rev-3', ok: false } },
    });
    expect(bad.msg?.$case === 'nodeConfigRefreshResult' && bad.msg.nodeConfigRefreshResult.error).toContain(
      "type 'ollama'",
    );
    expect(agent.settings.maxConcurrency()).toBe(1);
    expect(agent.registry.resolve('cli')).toBe(first);
    expect(first.closeCount).toBe(0);
  });

  it('takes its previous payload back when the edge reverts a rejected refresh, keeping the adapter instances', async () => {
    await registered();
    const first = factory.built[0];
    const original = agent.settings.payload;
    await edge
      .latest()
      .send(envelope.nodeConfigRefreshRequest('f-1', payload({ revision: 'rev-2', maxConcurrency: 9 })));
    await edge.latest().send(envelope.nodeConfigRefreshRequest('f-2', payload()));
    await waitFor(() => messagesOf(edge, 'nodeConfigRefreshResult').length === 2, 2000, 'refresh results');
    expect(
      messagesOf(edge, 'nodeConfigRefreshResult').map((message) =>
        message.msg?.$case === 'nodeConfigRefreshResult'
          ? [
              message.requestId,
              message.msg.nodeConfigRefreshResult.revision,
              message.msg.nodeConfigRefreshResult.ok,
            ]
          : [],
      ),
    ).toEqual([
      ['f-1', 'rev-2', true],
      ['f-2', 'rev-1', true],
    ]);
    expect(agent.settings.payload).toEqual(original);
    expect(agent.settings.maxConcurrency()).toBe(4);
    expect(agent.registry.resolve('cli')).toBe(first);
    expect(first.closeCount).toBe(0);
  });

  it('ends in-flight runs when the edge goes away and re-registers when it returns', async () => {
    await registered();
    await edge.latest().send(
      envelope.runRequest({
        runId: 'held',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        metadata: { fake: 'hold' },
      }),
    );
    await waitFor(() => agent.executor.inFlight === 1, 2000, 'run start');
    await edge.close('shutdown');
    await waitFor(() => agent.executor.inFlight === 0, 2000, 'run aborted');
    await waitFor(() => history.list()[0]?.status === 'cancelled', 2000, 'history');
    await edge.restart();
    await waitFor(
      () => edge.registrations.length === 2 && agent.link.state === 'registered',
      3000,
      're-registration',
    );
    expect(factory.built).toHaveLength(1);
  });

  it('stop() aborts runs first, says goodbye shutdown, closes adapters and ends run() with stopped', async () => {
    const outcome = agent.run();
    await waitFor(() => agent.link.state === 'registered' && factory.built.length > 0, 3000, 'registration');
    await edge.latest().send(
      envelope.runRequest({
        runId: 'held',
        adapter: 'cli',
        target: 'fake-cli',
        sessionId: 'default',
        metadata: { fake: 'hold' },
      }),
    );
    await waitFor(() => agent.executor.inFlight === 1, 2000, 'run start');
    await agent.stop('shutdown');
    expect(await outcome).toEqual({ kind: 'stopped', reason: 'shutdown' });
    const kinds = edge.kinds();
    const cancelledAt = edge.received.findIndex(
      (entry) =>
        entry.message.msg?.$case === 'runEvent' && entry.message.msg.runEvent.event?.$case === 'cancelled',
    );
    expect(cancelledAt).toBeGreaterThan(-1);
    expect(kinds.indexOf('goodbye')).toBeGreaterThan(cancelledAt);
    expect(factory.built[0].closeCount).toBe(1);
    expect(factory.built[0].active).toBe(0);
  });
});

describe('NodeAgent discovery', () => {
  it('registers without waiting for a hanging probe, reports after registration and on `discover`', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-agent-discovery-'));
    const history = SqliteRunHistory.open({ path: path.join(dir, 'history.db') });
    const edge = await FakeEdge.start({
      answer: () => ({
        accepted: true,
        edgeId: 'e',
        heartbeatIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        config: payload({
          adapters: [],
          discovery: { openaiCompatUrls: ['http://127.0.0.1:9/v1'], localPorts: [] },
        }),
      }),
    });
    // Ollama answers; the configured server accepts and never answers (its probe ends at the HTTP deadline).
    const deps = fakeProbeDeps({
      http: {
        'http://127.0.0.1:11434/api/tags': { models: [{ name: 'qwen3:8b' }] },
        'http://127.0.0.1:9/v1/models': 'hang',
      },
      executables: { codex: '/bin/codex' },
      exec: { '/bin/codex --version': { stdout: 'codex-cli 0.46.0' } },
    });
    const agent = new NodeAgent({
      nodeId: 'test-node',
      token: 'tok',
      agentVersion: '0.1.0',
      connect: createDialer({ host: '127.0.0.1', port: edge.port, connectTimeoutMs: 500 }),
      factories: {},
      history,
      logger: silentLogger,
      retryIntervalMs: 40,
      maxRetries: 20,
      discovery: { deps, httpTimeoutMs: 400 },
    });
    try {
      const started = Date.now();
      void agent.run();
      await waitFor(() => agent.link.state === 'registered', 3000, 'registration');
      // Registered well before the hanging probe's deadline: discovery runs after, never in front.
      expect(messagesOf(edge, 'nodeDiscovery')).toHaveLength(0);
      const report = await (async () => {
        await waitFor(() => messagesOf(edge, 'nodeDiscovery').length === 1, 3000, 'discovery report');
        return messagesOf(edge, 'nodeDiscovery')[0]?.msg;
      })();
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(report).toMatchObject({
        nodeDiscovery: {
          backends: [{ kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', models: ['qwen3:8b'] }],
          clis: [{ name: 'codex', path: '/bin/codex', version: 'codex-cli 0.46.0' }],
        },
      });
      expect(deps.fetched).toContain('http://127.0.0.1:9/v1/models');

      await edge.latest().send(envelope.nodeCommandRequest('d-1', { command: 'discover' }));
      await waitFor(() => messagesOf(edge, 'nodeCommandResponse').length === 1, 3000, 'discover response');
      // The forced pass is sent (although unchanged) before the command's answer.
      const kinds = edge.received.map((entry) => entry.message.msg?.$case);
      expect(kinds.lastIndexOf('nodeDiscovery')).toBeLessThan(kinds.lastIndexOf('nodeCommandResponse'));
      expect(messagesOf(edge, 'nodeDiscovery')).toHaveLength(2);
      expect(messagesOf(edge, 'nodeCommandResponse')[0]?.msg).toMatchObject({
        nodeCommandResponse: { ok: true, result: { backends: 'ollama', clis: 'codex', models: '1' } },
      });
    } finally {
      await agent.stop();
      await edge.close();
      await history.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
