import { afterEach, describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { silentLogger } from '../logging.js';
import { createProviderPool, type ProviderPool } from '../pool/provider-pool.js';
import { connectAll, FakeNodes, poolConfig, providerConfig } from '../pool/test-support/pool-fixture.js';
import { systemClock } from '../clock.js';
import type { EdgeService, RunHandle, RunOutcome } from '../service/types.js';
import { createRunDispatcher } from './run-dispatcher.js';
import { SessionSlots } from './session-slots.js';
import type { ResolvedRoute } from './route-resolver.js';
import type { RunSpec } from './run-spec.js';
import { FakeEdgeService, textRun } from '../test-support/fake-edge-service.js';
import { ServiceError } from '../service/errors.js';

const pools: ProviderPool[] = [];
afterEach(() => {
  for (const pool of pools.splice(0)) pool.close();
});

function setup(service: EdgeService) {
  const config = poolConfig([providerConfig('a', { capacity: 1 })]);
  const nodes = new FakeNodes();
  connectAll(nodes, config);
  const pool = createProviderPool({ config, nodes: nodes.list });
  pools.push(pool);
  const dispatcher = createRunDispatcher({
    service,
    pool,
    clock: systemClock,
    logger: silentLogger,
    sessionId: 's',
    timeoutMs: 0,
    cancelGraceMs: 50,
  });
  const modelConfig = pool.model('m');
  if (!modelConfig) throw new Error('model m missing');
  const route: ResolvedRoute = { kind: 'pool', model: 'm', modelConfig, workspaceRequired: false };
  return { pool, dispatcher, route };
}

const spec: RunSpec = {
  messages: [create.chatMessage({ role: 'user', content: 'hi' })],
  tools: [],
  params: create.generationParams({}),
  metadata: {},
  reasoningRequested: false,
  includeReasoning: false,
};

describe('run dispatcher', () => {
  it('releases the lease when the run completes and the consumer finishes', async () => {
    const service = new FakeEdgeService(() => ({ parts: textRun(['a']) }));
    const { pool, dispatcher, route } = setup(service);
    const run = await dispatcher.start(route, spec, new AbortController().signal);
    expect(run.providerId).toBe('a');
    expect(service.submitted[0]).toMatchObject({
      node: 'node-a',
      adapter: 'openai_compat',
      target: 'served-a',
      timeoutMs: undefined,
    });
    const types: string[] = [];
    for await (const part of run.parts()) types.push(part.type);
    expect(types).toEqual(['start', 'text-delta', 'usage', 'complete']);
    run.finish('done');
    run.finish('done');
    expect(pool.totals().inFlight).toBe(0);
  });

  it('gives concurrent runs distinct session ids and frees them when the runs end', async () => {
    const service = new FakeEdgeService(() => ({ parts: textRun(['a']), delayMs: 20 }));
    const config = poolConfig([providerConfig('a', { capacity: 3 })]);
    const nodes = new FakeNodes();
    connectAll(nodes, config);
    const pool = createProviderPool({ config, nodes: nodes.list });
    pools.push(pool);
    const sessions = new SessionSlots();
    const dispatcher = createRunDispatcher({
      service,
      pool,
      clock: systemClock,
      logger: silentLogger,
      sessionId: 'openai',
      timeoutMs: 0,
      sessions,
    });
    const modelConfig = pool.model('m');
    if (!modelConfig) throw new Error('model m missing');
    const route: ResolvedRoute = { kind: 'pool', model: 'm', modelConfig, workspaceRequired: false };
    const runs = await Promise.all(
      [1, 2, 3].map(() => dispatcher.start(route, spec, new AbortController().signal)),
    );
    expect(service.submitted.map((input) => input.sessionId)).toEqual(['openai', 'openai-2', 'openai-3']);
    await Promise.all(runs.map((run) => run.handle.done));
    for (const run of runs) run.finish('done');
    expect(sessions.held).toBe(0);
    expect(pool.totals().inFlight).toBe(0);
  });

  it('returns the lease when submitRun fails', async () => {
    const service = new FakeEdgeService(() => ({
      parts: [],
      submitError: new ServiceError('node_disconnected', 'gone'),
    }));
    const { pool, dispatcher, route } = setup(service);
    await expect(dispatcher.start(route, spec, new AbortController().signal)).rejects.toThrow('gone');
    expect(pool.totals().inFlight).toBe(0);
  });

  it('holds the lease of an abandoned run until the node confirms the cancel', async () => {
    const service = new FakeEdgeService(() => ({ parts: textRun(['a', 'b', 'c']), delayMs: 30 }));
    const { pool, dispatcher, route } = setup(service);
    const run = await dispatcher.start(route, spec, new AbortController().signal);
    run.finish('client disconnected');
    await run.handle.done;
    expect(service.cancels).toBe(1);
    expect(pool.totals().inFlight).toBe(0);
  });

  it('returns the lease after cancelGraceMs when a cancelled run never settles', async () => {
    let settle!: (outcome: RunOutcome) => void;
    const handle: RunHandle = {
      runId: 'stuck',
      nodeId: 'node-a',
      events: { [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }) },
      done: new Promise<RunOutcome>((resolve) => (settle = resolve)),
      cancel: () => Promise.resolve(),
      overheadMs: () => undefined,
    };
    const service = new FakeEdgeService(() => ({ parts: [] }));
    service.submitRun = () => Promise.resolve(handle);
    const { pool, dispatcher, route } = setup(service);
    const controller = new AbortController();
    const run = await dispatcher.start(route, spec, controller.signal);
    const reading = (async () => {
      for await (const part of run.parts()) void part;
    })();
    controller.abort();
    await reading;
    run.finish('client disconnected');
    expect(pool.totals().inFlight).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(pool.totals().inFlight).toBe(0);
    settle({ status: 'cancelled', reason: 'late' });
    await handle.done;
    expect(pool.totals().inFlight).toBe(0);
  });
});
