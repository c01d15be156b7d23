import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock, systemClock } from '@iop/clock';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { CancelAction, create, type CancelRequest, type RunRequest } from '@iop/wire';
import { AdapterRegistry } from '../adapters/registry.js';
import { SqliteRunHistory } from '../history/sqlite-run-history.js';
import { silentLogger } from '@iop/logging';
import { RunExecutor } from './run-executor.js';
import { adapterInstance, fakeFactory, FakeAdapter } from './test-support/fake-adapter.js';
import { RecordingOutbound } from './test-support/recording-outbound.js';

function runRequest(runId: string, fields: Partial<RunRequest> = {}): RunRequest {
  return create.runRequest({
    runId,
    adapter: 'cli',
    target: 'fake-cli',
    sessionId: 'default',
    messages: [create.chatMessage({ role: 'user', content: 'PING' })],
    ...fields,
  });
}

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function cancelRequest(fields: Partial<CancelRequest>): CancelRequest {
  return {
    action: CancelAction.CANCEL_ACTION_CANCEL_RUN,
    runId: '',
    adapter: 'cli',
    target: 'fake-cli',
    sessionId: 'default',
    reason: '',
    ...fields,
  };
}

describe('RunExecutor', () => {
  let dir: string;
  let history: SqliteRunHistory;
  let outbound: RecordingOutbound;
  let registry: AdapterRegistry;
  let factory: ReturnType<typeof fakeFactory>;
  let maxConcurrency: number;
  let executor: RunExecutor;
  let ended: string[];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-executor-'));
    history = SqliteRunHistory.open({ path: path.join(dir, 'history.db') });
    outbound = new RecordingOutbound();
    factory = fakeFactory('cli');
    registry = new AdapterRegistry({
      factories: { cli: factory },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    registry.apply([adapterInstance('cli', 'cli')]);
    maxConcurrency = 4;
    ended = [];
    executor = new RunExecutor({
      adapters: registry,
      outbound,
      history,
      logger: silentLogger,
      clock: systemClock,
      maxConcurrency: () => maxConcurrency,
      shutdownGraceMs: 1000,
      runEnded: (adapterName) => ended.push(adapterName),
    });
  });

  afterEach(async () => {
    await executor.shutdown();
    await registry.close();
    await history.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const adapter = (): FakeAdapter => factory.built[0];

  it('tells runEnded the adapter of each run once it ended (after its slot is free), failed runs too', async () => {
    executor.submit(runRequest('r1'));
    executor.submit(runRequest('r2', { metadata: { fake: 'fail' } }));
    await executor.idle();
    expect(ended).toEqual(['cli', 'cli']);
    expect(executor.inFlight).toBe(0);
  });

  it('streams the adapter parts as numbered, timestamped run events and records the run', async () => {
    const before = Date.now();
    executor.submit(runRequest('run-1'));
    await executor.idle();
    const events = outbound.runEvents('run-1');
    expect(events.map((event) => event.part.type)).toEqual(['start', 'text-delta', 'usage', 'complete']);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    expect(events.every((event) => event.atUnixMs >= before && event.atUnixMs <= Date.now())).toBe(true);
    expect(events[1].part).toEqual({ type: 'text-delta', text: 'PING_OK' });
    const [run] = history.list();
    expect(run).toMatchObject({ runId: 'run-1', status: 'completed', detail: 'stop', eventCount: 4 });
    expect(run.usage?.totalTokens).toBe(3);
    expect(executor.inFlight).toBe(0);
    expect(executor.slotsInUse).toBe(0);
  });

  it('frees the max_concurrency slot before the terminal event leaves, so the next dispatch never sees node_busy', async () => {
    maxConcurrency = 1;
    // A fast edge: the moment run-1's terminal event is sent, the next run arrives.
    const send = outbound.send.bind(outbound);
    let chained = false;
    outbound.send = (message) => {
      const result = send(message);
      const event = message.msg?.$case === 'runEvent' ? message.msg.runEvent : undefined;
      if (!chained && event?.runId === 'run-1' && event.event?.$case === 'complete') {
        chained = true;
        executor.submit(runRequest('run-2'));
      }
      return result;
    };
    executor.submit(runRequest('run-1'));
    expect((await outbound.waitForTerminal('run-2')).part.type).toBe('complete');
    await executor.idle();
    expect(executor.slotsInUse).toBe(0);
  });

  it('resolves an adapter by its type name when one instance of that type is enabled', async () => {
    registry.apply([adapterInstance('my-cli', 'cli')]);
    executor.submit(runRequest('run-1', { adapter: 'cli' }));
    await executor.idle();
    expect(outbound.runEvents('run-1')[0].part).toMatchObject({ type: 'start', adapter: 'my-cli' });
  });

  it('answers a run over max_concurrency with an error part node_busy and frees every slot afterwards', async () => {
    maxConcurrency = 1;
    executor.submit(runRequest('hold', { metadata: { fake: 'hold' } }));
    await outbound.waitForEvents('hold', 1);
    executor.submit(runRequest('busy'));
    const busy = await outbound.waitForTerminal('busy');
    expect(busy.part).toMatchObject({ type: 'error', code: 'node_busy', retryable: true });
    expect(busy.seq).toBe(1);
    expect(history.list().find((run) => run.runId === 'busy')).toMatchObject({
      status: 'error',
      errorCode: 'node_busy',
    });
    await executor.cancel(cancelRequest({ runId: 'hold' }));
    await executor.idle();
    expect(executor.slotsInUse).toBe(0);
    executor.submit(runRequest('after'));
    expect((await outbound.waitForTerminal('after')).part.type).toBe('complete');
  });

  it('runs a child run (parent_run_id set) while every max_concurrency slot is taken, without taking one', async () => {
    maxConcurrency = 1;
    executor.submit(runRequest('agent', { metadata: { fake: 'hold' } }));
    await outbound.waitForEvents('agent', 1);
    executor.submit(runRequest('call-1', { parentRunId: 'agent', sessionId: 'call-1' }));
    expect((await outbound.waitForTerminal('call-1')).part.type).toBe('complete');
    expect(executor.slotsInUse).toBe(1);
    executor.submit(runRequest('other'));
    expect((await outbound.waitForTerminal('other')).part).toMatchObject({
      type: 'error',
      code: 'node_busy',
    });
    await executor.cancel(cancelRequest({ runId: 'agent' }));
    await executor.idle();
    expect(executor.slotsInUse).toBe(0);
  });

  it('CANCEL_RUN aborts that run with its reason and keeps the session', async () => {
    executor.submit(runRequest('hold', { metadata: { fake: 'hold' } }));
    await outbound.waitForEvents('hold', 1);
    expect(await executor.cancel(cancelRequest({ runId: 'hold', reason: 'user pressed stop' }))).toBe(true);
    const terminal = await outbound.waitForTerminal('hold');
    expect(terminal.part).toEqual({ type: 'cancelled', reason: 'user pressed stop' });
    expect(adapter().terminated).toEqual([]);
    expect(adapter().sessions.has('fake-cli/default')).toBe(true);
    await executor.idle();
    expect(history.list()[0]).toMatchObject({ status: 'cancelled', detail: 'user pressed stop' });
    expect(await executor.cancel(cancelRequest({ runId: 'unknown' }))).toBe(false);
  });

  it('TERMINATE_SESSION ends the runs of that session and calls adapter.terminateSession', async () => {
    executor.submit(runRequest('in-session', { metadata: { fake: 'hold' }, sessionId: 's1' }));
    executor.submit(runRequest('other-session', { metadata: { fake: 'hold' }, sessionId: 's2' }));
    await outbound.waitForEvents('in-session', 1);
    await outbound.waitForEvents('other-session', 1);
    const terminated = await executor.cancel(
      cancelRequest({ action: CancelAction.CANCEL_ACTION_TERMINATE_SESSION, sessionId: 's1' }),
    );
    expect(terminated).toBe(true);
    expect(adapter().terminated).toEqual([{ target: 'fake-cli', sessionId: 's1' }]);
    expect((await outbound.waitForTerminal('in-session')).part.type).toBe('cancelled');
    expect(outbound.runEvents('other-session').map((event) => event.part.type)).toEqual(['start']);
    await waitFor(() => executor.inFlight === 1);
  });

  it('refuses an unknown adapter with an error part naming the enabled ones', async () => {
    executor.submit(runRequest('run-x', { adapter: 'nope' }));
    const terminal = await outbound.waitForTerminal('run-x');
    expect(terminal.part).toMatchObject({ type: 'error', code: 'adapter_not_found' });
    expect((terminal.part as { message: string }).message).toContain('enabled: cli');
    expect(executor.slotsInUse).toBe(0);
  });

  it('refuses a duplicate run id while the first is running, leaving the first untouched', async () => {
    executor.submit(runRequest('dup', { metadata: { fake: 'hold' } }));
    await outbound.waitForEvents('dup', 1);
    executor.submit(runRequest('dup'));
    await outbound.waitForEvents('dup', 2);
    expect(outbound.runEvents('dup')[1].part).toMatchObject({ type: 'error', code: 'duplicate_run' });
    expect(executor.inFlight).toBe(1);
    expect(history.list()[0]).toMatchObject({ runId: 'dup', status: 'running' });
  });

  it('turns the run deadline, kept on the injected clock, into an error run_timeout', async () => {
    const clock = new ManualClock(1_000);
    const local = new RunExecutor({
      adapters: registry,
      outbound,
      history,
      logger: silentLogger,
      clock,
      maxConcurrency: () => 0,
    });
    try {
      local.submit(runRequest('slow', { metadata: { fake: 'hold' }, timeoutMs: 30_000 }));
      await outbound.waitForEvents('slow', 1);
      expect(clock.pending).toBe(1);
      clock.advance(29_999);
      await new Promise((resolve) => setImmediate(resolve));
      expect(local.inFlight).toBe(1);
      clock.advance(1);
      const terminal = await outbound.waitForTerminal('slow');
      expect(terminal.part).toMatchObject({ type: 'error', code: 'run_timeout', retryable: false });
      await waitFor(() => local.inFlight === 0);
      expect(clock.pending).toBe(0);
    } finally {
      // shutdown's grace wait runs on the manual clock too: let it pass.
      const stopped = local.shutdown();
      clock.advance(5_000);
      await stopped;
    }
  });

  it('reports an adapter that throws or ends without a terminal part as an error part', async () => {
    const broken = new FakeAdapter('broken');
    broken.run = async function* () {
      await Promise.resolve();
      yield { type: 'start', sessionId: 'default', adapter: 'broken', target: 't' } as const;
      throw new Error('process exploded');
    };
    const silent = new FakeAdapter('silent');
    silent.run = async function* () {
      await Promise.resolve();
      yield { type: 'start', sessionId: 'default', adapter: 'silent', target: 't' } as const;
    };
    const adapters = {
      acquire: (name: string) => ({ adapter: name === 'broken' ? broken : silent, release: () => undefined }),
    };
    const local = new RunExecutor({
      adapters,
      outbound,
      history,
      logger: silentLogger,
      clock: systemClock,
      maxConcurrency: () => 0,
    });
    local.submit(runRequest('throws', { adapter: 'broken' }));
    local.submit(runRequest('silent', { adapter: 'silent' }));
    await local.idle();
    expect((await outbound.waitForTerminal('throws')).part).toMatchObject({
      type: 'error',
      code: 'adapter_failed',
      message: 'process exploded',
    });
    expect((await outbound.waitForTerminal('silent')).part).toMatchObject({
      type: 'error',
      code: 'adapter_protocol',
    });
  });

  it('ignores parts an adapter yields after its terminal part', async () => {
    const chatty = new FakeAdapter('chatty');
    chatty.run = async function* () {
      await Promise.resolve();
      yield { type: 'start', sessionId: 'default', adapter: 'chatty', target: 't' } as const;
      yield { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 } as const;
      yield { type: 'text-delta', text: 'late' } as const;
    };
    const local = new RunExecutor({
      adapters: { acquire: () => ({ adapter: chatty, release: () => undefined }) },
      outbound,
      history,
      logger: silentLogger,
      clock: systemClock,
      maxConcurrency: () => 0,
    });
    local.submit(runRequest('chatty'));
    await local.idle();
    expect(outbound.runEvents('chatty').map((event) => event.part.type)).toEqual(['start', 'complete']);
  });

  it('coalesces deltas produced in one burst into one event and one history row per kind, text unchanged', async () => {
    const bursty = new FakeAdapter('bursty');
    bursty.run = async function* () {
      await Promise.resolve();
      yield { type: 'start', sessionId: 'default', adapter: 'bursty', target: 't' } as const;
      // One upstream chunk: several tokens ready at once, a change of kind in the middle.
      yield { type: 'text-delta', text: 'Hel' } as const;
      yield { type: 'text-delta', text: 'lo' } as const;
      yield { type: 'reasoning-delta', text: 'hmm' } as const;
      yield { type: 'reasoning-delta', text: '…' } as const;
      yield { type: 'text-delta', text: ', ' } as const;
      // The next chunk arrives later (I/O in between): a new event.
      await new Promise((resolve) => setTimeout(resolve, 5));
      yield { type: 'text-delta', text: 'world' } as const;
      yield { type: 'text-delta', text: '!' } as const;
      yield { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 } as const;
    };
    const local = new RunExecutor({
      adapters: { acquire: () => ({ adapter: bursty, release: () => undefined }) },
      outbound,
      history,
      logger: silentLogger,
      clock: systemClock,
      maxConcurrency: () => 0,
    });
    local.submit(runRequest('bursty'));
    await local.idle();
    const events = outbound.runEvents('bursty');
    expect(events.map((event) => event.part)).toEqual([
      { type: 'start', sessionId: 'default', adapter: 'bursty', target: 't' },
      { type: 'text-delta', text: 'Hello' },
      { type: 'reasoning-delta', text: 'hmm…' },
      { type: 'text-delta', text: ', ' },
      { type: 'text-delta', text: 'world!' },
      { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
    ]);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const rows = history.events('bursty');
    expect(rows.map((row) => row.type)).toEqual([
      'start',
      'text-delta',
      'reasoning-delta',
      'text-delta',
      'text-delta',
      'complete',
    ]);
    expect(rows.map((row) => (row.payload as { text?: string }).text ?? '').join('')).toBe(
      'Hellohmm…, world!',
    );
  });

  it('abortAll(link-lost) cancels every run; shutdown refuses new runs', async () => {
    executor.submit(runRequest('a', { metadata: { fake: 'hold' } }));
    executor.submit(runRequest('b', { metadata: { fake: 'hold' }, sessionId: 'other' }));
    await outbound.waitForEvents('a', 1);
    await outbound.waitForEvents('b', 1);
    executor.abortAll('link-lost', 'edge link lost');
    await executor.idle();
    expect((await outbound.waitForTerminal('a')).part).toEqual({
      type: 'cancelled',
      reason: 'edge link lost',
    });
    expect((await outbound.waitForTerminal('b')).part.type).toBe('cancelled');
    await executor.shutdown();
    executor.submit(runRequest('late'));
    expect((await outbound.waitForTerminal('late')).part).toMatchObject({
      type: 'error',
      code: 'node_shutting_down',
    });
    expect(adapter().active).toBe(0);
  });

  it('keeps a run going on an instance retired by a refresh and closes it when the run ends', async () => {
    executor.submit(runRequest('hold', { metadata: { fake: 'hold' } }));
    await outbound.waitForEvents('hold', 1);
    registry.apply([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(adapter().closeCount).toBe(0);
    await executor.cancel(cancelRequest({ runId: 'hold' }));
    await executor.idle();
    await new Promise((resolve) => setImmediate(resolve));
    expect(adapter().closeCount).toBe(1);
  });
});
