import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  CancelAction,
  CLOSE_REASONS,
  create,
  envelope,
  PROTOCOL_VERSION,
  RegisterRejectCode,
  type RegisterResponse,
} from '@iop/wire';
import { silentLogger } from '@iop/logging';
import { createDialer } from './dial.js';
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_RETRY_INTERVAL_MS,
  describeOutcome,
  EXIT_CODE_REPLACED,
  exitCodeFor,
  EdgeLink,
  type LinkHandler,
  type EdgeLinkOptions,
} from './edge-link.js';
import { ManualClock, systemClock } from '@iop/clock';
import { FakeEdge, waitFor, type FakeEdgeOptions } from './test-support/fake-edge.js';

class RecordingHandler implements LinkHandler {
  readonly registrations: Array<{ response: RegisterResponse; reconnect: boolean }> = [];
  readonly calls: string[] = [];
  readonly disconnects: string[] = [];
  registered(response: RegisterResponse, context: { reconnect: boolean }): void {
    this.registrations.push({ response, reconnect: context.reconnect });
  }
  runRequest(request: { runId: string }): void {
    this.calls.push(`run:${request.runId}`);
  }
  cancelRequest(request: { runId: string }): void {
    this.calls.push(`cancel:${request.runId}`);
  }
  nodeCommandRequest(requestId: string, request: { command: string }): void {
    this.calls.push(`command:${requestId}:${request.command}`);
  }
  nodeConfigRefreshRequest(requestId: string): void {
    this.calls.push(`refresh:${requestId}`);
  }
  disconnected(reason: string): void {
    this.disconnects.push(reason);
  }
}

const registration = {
  nodeId: 'test-node',
  token: 'secret-token',
  agentVersion: '0.1.0',
  os: 'linux',
  arch: 'x64',
  hostname: 'box',
  supportedAdapters: ['cli', 'ollama'],
};

describe('EdgeLink against a fake edge over loopback', () => {
  const edges: FakeEdge[] = [];
  const links: EdgeLink[] = [];

  afterEach(async () => {
    await Promise.all(links.splice(0).map((link) => link.stop()));
    await Promise.all(edges.splice(0).map((edge) => edge.close()));
  });

  async function startEdge(options?: FakeEdgeOptions): Promise<FakeEdge> {
    const edge = await FakeEdge.start(options);
    edges.push(edge);
    return edge;
  }

  function createLink(
    edge: FakeEdge,
    handler: LinkHandler,
    options: Partial<EdgeLinkOptions> = {},
  ): EdgeLink {
    const link = new EdgeLink({
      connect: createDialer({ host: '127.0.0.1', port: edge.port, connectTimeoutMs: 500 }),
      registration,
      handler,
      logger: silentLogger,
      retryIntervalMs: 30,
      maxRetries: 3,
      registerTimeoutMs: 500,
      ...options,
    });
    links.push(link);
    return link;
  }

  it("sends its identity key and answers the edge's challenge with a proof the edge can verify", async () => {
    const edge = await startEdge({ challenge: Buffer.alloc(32, 5) });
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const publicKeySpki = publicKey.export({ type: 'spki', format: 'der' });
    const link = createLink(edge, new RecordingHandler(), {
      registration: { ...registration, identity: { privateKey, publicKeySpki } },
    });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    expect(Buffer.from(edge.registrations[0]?.identityPublicKey ?? [])).toEqual(publicKeySpki);
    expect(edge.proofs).toEqual([true]);
    await link.stop();
    expect(await outcome).toEqual({ kind: 'stopped', reason: 'shutdown' });
  });

  it('ends with identity_mismatch when the edge refuses its identity, without retrying', async () => {
    const edge = await startEdge({
      challenge: Buffer.alloc(32, 6),
      answer: () => ({
        accepted: false,
        rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
        reason: "node 'test-node' is bound to identity sha256:aa…",
      }),
    });
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const link = createLink(edge, new RecordingHandler(), {
      registration: {
        ...registration,
        identity: { privateKey, publicKeySpki: publicKey.export({ type: 'spki', format: 'der' }) },
      },
    });
    expect(await link.run()).toEqual({
      kind: 'rejected',
      code: 'identity_mismatch',
      reason: "node 'test-node' is bound to identity sha256:aa…",
    });
    expect(edge.registrations).toHaveLength(1);
  });

  it('registers with every field of the register request and hands the payload to the handler', async () => {
    const edge = await startEdge({
      answer: () => ({
        accepted: true,
        edgeId: 'edge-1',
        heartbeatIntervalMs: 1000,
        heartbeatTimeoutMs: 3000,
        config: {
          nodeId: 'test-node',
          alias: 'n0',
          maxConcurrency: 4,
          adapters: [],
          providers: [],
          revision: 'r1',
          healthProbeIntervalMs: 0,
        },
      }),
    });
    const handler = new RecordingHandler();
    const link = createLink(edge, handler);
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    expect(edge.registrations[0]).toEqual({
      ...registration,
      protocolVersion: PROTOCOL_VERSION,
      agentKind: 'iop-node',
      identityPublicKey: Buffer.alloc(0),
      // No run kinds besides chat were given to this link.
      runKinds: [],
    });
    expect(handler.registrations).toHaveLength(1);
    expect(handler.registrations[0].response.config?.revision).toBe('r1');
    expect(handler.registrations[0].reconnect).toBe(false);
    expect(link.status()).toEqual({
      nodeId: 'test-node',
      connected: true,
      state: 'connected',
      edgeId: 'edge-1',
    });
    await link.stop();
    expect(await outcome).toEqual({ kind: 'stopped', reason: 'shutdown' });
    expect(link.state).toBe('closed');
    await waitFor(() => edge.kinds().includes('goodbye'), 2000, 'goodbye');
    const goodbye = edge.received.find((entry) => entry.message.msg?.$case === 'goodbye')!.message;
    expect(goodbye.msg).toMatchObject({ goodbye: { reason: 'shutdown' } });
  });

  it("ends with the edge's reason and a non-zero exit code when the registration is rejected", async () => {
    const edge = await startEdge({
      answer: () => ({
        accepted: false,
        rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
        reason: 'token does not match node test-node',
      }),
    });
    const handler = new RecordingHandler();
    const link = createLink(edge, handler);
    const outcome = await link.run();
    expect(outcome).toEqual({
      kind: 'rejected',
      code: 'bad_token',
      reason: 'token does not match node test-node',
    });
    expect(exitCodeFor(outcome)).toBe(1);
    expect(describeOutcome(outcome)).toContain('token does not match node test-node');
    expect(link.state).toBe('closed');
    expect(handler.registrations).toHaveLength(0);
  });

  it('fails at once when the first connection cannot be made', async () => {
    const edge = await startEdge();
    const port = edge.port;
    await edge.close();
    edges.length = 0;
    const link = new EdgeLink({
      connect: createDialer({ host: '127.0.0.1', port, connectTimeoutMs: 500 }),
      registration,
      handler: new RecordingHandler(),
      logger: silentLogger,
    });
    const outcome = await link.run();
    expect(outcome.kind).toBe('connect-failed');
    expect(exitCodeFor(outcome)).toBe(1);
  });

  it('gives up a first handshake the edge never answers after registerTimeoutMs', async () => {
    const edge = await startEdge({ ignoreRegistrations: true });
    const link = createLink(edge, new RecordingHandler(), { registerTimeoutMs: 100 });
    const started = Date.now();
    const outcome = await link.run();
    expect(outcome).toEqual({
      kind: 'connect-failed',
      message: 'edge did not answer the registration within 100 ms',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(edge.registrations).toHaveLength(1);
  });

  it('pings every heartbeat interval and answers the edge pings with pongs of the same seq', async () => {
    const edge = await startEdge();
    const link = createLink(edge, new RecordingHandler());
    void link.run();
    await waitFor(() => edge.kinds().filter((kind) => kind === 'heartbeatPing').length >= 3, 3000, 'pings');
    const seqs = edge.received
      .filter((entry) => entry.message.msg?.$case === 'heartbeatPing')
      .map((entry) => (entry.message.msg as { heartbeatPing: { seq: number } }).heartbeatPing.seq);
    expect(seqs.slice(0, 3)).toEqual([1, 2, 3]);
    await edge.latest().send(envelope.heartbeatPing(42));
    await waitFor(() => edge.kinds().includes('heartbeatPong'), 2000, 'pong');
    const pong = edge.received.find((entry) => entry.message.msg?.$case === 'heartbeatPong')!.message;
    expect(pong.msg).toMatchObject({ heartbeatPong: { seq: 42 } });
  });

  it('drops a silent edge after heartbeat_timeout_ms and reconnects', async () => {
    const edge = await startEdge({
      answerPings: false,
      answer: () => ({ accepted: true, heartbeatIntervalMs: 20, heartbeatTimeoutMs: 100 }),
    });
    const handler = new RecordingHandler();
    const link = createLink(edge, handler);
    void link.run();
    await waitFor(() => handler.disconnects.length > 0, 3000, 'heartbeat timeout');
    expect(handler.disconnects[0]).toBe('heartbeat-timeout');
    await waitFor(() => handler.registrations.length === 2, 3000, 're-registration');
    expect(handler.registrations[1].reconnect).toBe(true);
  });

  it('re-registers without user action after the edge restarts', async () => {
    const edge = await startEdge();
    const handler = new RecordingHandler();
    const link = createLink(edge, handler, { retryIntervalMs: 40, maxRetries: 10 });
    const states: string[] = [];
    link.onStateChange((next) => states.push(next));
    void link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.close('shutdown');
    await waitFor(() => link.state === 'reconnecting', 3000, 'reconnecting');
    expect(await link.send(envelope.heartbeatPing(1))).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await edge.restart();
    await waitFor(() => handler.registrations.length === 2, 3000, 're-registration');
    expect(link.state).toBe('registered');
    expect(handler.disconnects).toEqual(['shutdown']);
    expect(states).toEqual(['registered', 'reconnecting', 'registered']);
    expect(edge.registrations).toHaveLength(2);
  });

  it('gives up after maxRetries attempts with a non-zero exit code', async () => {
    const edge = await startEdge();
    const handler = new RecordingHandler();
    // No jitter: with the default ±20 % three waits of 20 ms may take 48 ms, and the bound below is exact.
    const link = createLink(edge, handler, { retryIntervalMs: 20, maxRetries: 3, retryJitter: 0 });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    const started = Date.now();
    await edge.close();
    const result = await outcome;
    expect(result).toMatchObject({ kind: 'retries-exhausted', attempts: 3 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    expect(exitCodeFor(result)).toBe(1);
    expect(link.state).toBe('closed');
  });

  it('ends with rejected when a reconnect is refused, but retries past a shutting_down refusal', async () => {
    let answers = 0;
    const edge = await startEdge({
      answer: () => {
        answers += 1;
        if (answers === 1) return { accepted: true, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 5000 };
        if (answers === 2) {
          return {
            accepted: false,
            rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_SHUTTING_DOWN,
            reason: 'edge is shutting down',
          };
        }
        return {
          accepted: false,
          rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
          reason: 'token rotated',
        };
      },
    });
    const link = createLink(edge, new RecordingHandler(), { retryIntervalMs: 20, maxRetries: 5 });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.latest().close('shutdown', { goodbye: true });
    expect(await outcome).toEqual({ kind: 'rejected', code: 'bad_token', reason: 'token rotated' });
    expect(answers).toBe(3);
  });

  it('does not reconnect after the edge replaced this connection', async () => {
    const edge = await startEdge();
    const link = createLink(edge, new RecordingHandler());
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.latest().close('replaced', { goodbye: true });
    const result = await outcome;
    expect(result).toEqual({ kind: 'closed-by-edge', reason: 'replaced' });
    expect(edge.registrations).toHaveLength(1);
    // A dedicated status the service units list in RestartPreventExitStatus= (no restart into a replace loop).
    expect(exitCodeFor(result)).toBe(EXIT_CODE_REPLACED);
    expect(EXIT_CODE_REPLACED).not.toBe(exitCodeFor({ kind: 'closed-by-edge', reason: 'node-removed' }));
    // --replaced-exit-code (launchd agents pass 0).
    expect(exitCodeFor(result, 0)).toBe(0);
  });

  it('reconnects (never exits for good) when another edge of the fabric claimed the node', async () => {
    const edge = await startEdge();
    const handler = new RecordingHandler();
    const link = createLink(edge, handler, { retryIntervalMs: 20, maxRetries: 5 });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.latest().close(CLOSE_REASONS.claimedElsewhere, { goodbye: true });
    await waitFor(
      () => edge.registrations.length === 2 && link.state === 'registered',
      3000,
      're-registration',
    );
    expect(handler.disconnects).toEqual([CLOSE_REASONS.claimedElsewhere]);
    await link.stop('shutdown');
    const result = await outcome;
    expect(result).toEqual({ kind: 'stopped', reason: 'shutdown' });
    expect(exitCodeFor(result)).not.toBe(EXIT_CODE_REPLACED);
  });

  it('spreads the waits between reconnect attempts by ±retryJitter around the interval', async () => {
    const edge = await startEdge();
    const waits: number[] = [];
    const randoms = [0, 0.999_999, 0.5];
    const recordingClock = {
      ...systemClock,
      setTimeout: (callback: () => void, ms: number) => {
        // Retry waits are the only timers in 700..1300 ms (heartbeats 50 ms and 5 s, register timeout 400 ms).
        const retryWait = ms >= 700 && ms <= 1300;
        if (retryWait) waits.push(ms);
        return systemClock.setTimeout(callback, retryWait ? 1 : ms);
      },
    };
    const link = createLink(edge, new RecordingHandler(), {
      clock: recordingClock,
      retryIntervalMs: 1000,
      retryJitter: 0.2,
      random: () => randoms.shift() ?? 0.5,
      maxRetries: 3,
      registerTimeoutMs: 400,
    });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.close('shutdown');
    expect((await outcome).kind).toBe('retries-exhausted');
    expect(waits).toEqual([800, 1200, 1000]);
  });

  it('routes edge requests to the handler with their request ids and sends while registered', async () => {
    const edge = await startEdge();
    const handler = new RecordingHandler();
    const link = createLink(edge, handler);
    void link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    const connection = edge.latest();
    await connection.send(envelope.runRequest({ runId: 'run-1' }));
    await connection.send(
      envelope.cancelRequest({ runId: 'run-1', action: CancelAction.CANCEL_ACTION_CANCEL_RUN }),
    );
    await connection.send(envelope.nodeCommandRequest('c-1', { command: 'transport' }));
    await connection.send(envelope.nodeConfigRefreshRequest('f-1', {}));
    await waitFor(() => handler.calls.length === 4, 2000, 'dispatch');
    expect(handler.calls).toEqual(['run:run-1', 'cancel:run-1', 'command:c-1:transport', 'refresh:f-1']);
    expect(
      await link.send(envelope.nodeCommandResponse('c-1', create.nodeCommandResponse({ ok: true }))),
    ).toBe(true);
    await waitFor(() => edge.kinds().includes('nodeCommandResponse'), 2000, 'response');
  });

  it('stop() during the reconnect wait ends the link at once with stopped', async () => {
    const edge = await startEdge();
    const link = createLink(edge, new RecordingHandler(), { retryIntervalMs: 60_000, maxRetries: 10 });
    const outcome = link.run();
    await waitFor(() => link.state === 'registered', 3000, 'registration');
    await edge.close();
    await waitFor(() => link.state === 'reconnecting', 3000, 'reconnecting');
    const started = Date.now();
    await link.stop('shutdown');
    expect(await outcome).toEqual({ kind: 'stopped', reason: 'shutdown' });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('EdgeLink reconnect defaults (fake clock)', () => {
  it('after a lost link, tries every 10 s (mid-jitter), 10 times, then ends with retries-exhausted', async () => {
    const edge = await FakeEdge.start();
    const clock = new ManualClock();
    const dial = createDialer({ host: '127.0.0.1', port: edge.port, connectTimeoutMs: 500 });
    const attempts: number[] = [];
    let first = true;
    const link = new EdgeLink({
      connect: (signal) => {
        if (first) {
          first = false;
          return dial(signal);
        }
        attempts.push(clock.now());
        return Promise.reject(new Error('connection refused'));
      },
      registration,
      handler: new RecordingHandler(),
      logger: silentLogger,
      clock,
      registerTimeoutMs: 500,
      // The middle of the default ±20% jitter window: exactly the seed's 10 s.
      random: () => 0.5,
    });
    try {
      const outcome = link.run();
      await waitFor(() => link.state === 'registered', 3000, 'registration');
      await edge.close();
      await waitFor(() => link.state === 'reconnecting', 3000, 'reconnecting');
      const lostAt = clock.now();
      for (let attempt = 1; attempt <= DEFAULT_MAX_RETRIES; attempt += 1) {
        // Nothing happens before the interval has fully passed.
        await waitFor(
          () => clock.pendingDelays().includes(DEFAULT_RETRY_INTERVAL_MS),
          3000,
          `wait ${attempt}`,
        );
        clock.advance(DEFAULT_RETRY_INTERVAL_MS - 1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(attempts).toHaveLength(attempt - 1);
        clock.advance(1);
        await waitFor(() => attempts.length === attempt, 3000, `attempt ${attempt}`);
      }
      const result = await outcome;
      expect(result).toMatchObject({ kind: 'retries-exhausted', attempts: 10 });
      expect(DEFAULT_RETRY_INTERVAL_MS).toBe(10_000);
      expect(attempts.map((at) => at - lostAt)).toEqual(
        Array.from({ length: 10 }, (_, index) => (index + 1) * 10_000),
      );
      expect(link.state).toBe('closed');
    } finally {
      await link.stop();
      await edge.close();
    }
  });
});
