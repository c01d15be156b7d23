import { getEventListeners } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { silentLogger } from '../logging.js';
import { abortWatcherCount } from '../abort-watchers.js';
import { createProviderPool } from '../pool/provider-pool.js';
import {
  FakeNodes,
  connectAll,
  modelConfig,
  poolConfig,
  providerConfig,
} from '../pool/test-support/pool-fixture.js';
import { FakeEdgeService, textRun } from '../test-support/fake-edge-service.js';
import type { ResolvedRoute } from './route-resolver.js';
import { createRunStarter } from './run-starter.js';
import type { RunBase, SurfaceRun } from './surface-run.js';

/** A chat run as a surface builds it: over the starter's base, with the caller beside it. */
function requestedOver(base: RunBase): SurfaceRun {
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages: [create.chatMessage({ role: 'user', content: 'hi' })],
      tools: [],
      params: create.generationParams({}),
      metadata: {},
      reasoningRequested: false,
    },
    caller: { includeReasoning: false },
  };
}

function setup(parts = textRun(['a', 'b']), delayMs = 0) {
  const config = poolConfig([providerConfig('p', { capacity: 2 })]);
  const nodes = new FakeNodes();
  connectAll(nodes, config);
  const pool = createProviderPool({ config, nodes });
  const service = new FakeEdgeService(() => ({ parts, delayMs }), nodes.list, pool);
  const starter = createRunStarter({ service, logger: silentLogger, sessionId: 'openai', timeoutMs: 30_000 });
  return { pool, service, starter, spec: requestedOver(starter.base) };
}

const poolRoute: ResolvedRoute = {
  kind: 'pool',
  model: 'm',
  modelConfig: modelConfig('m', { p: 'served-p' }),
  workspaceRequired: false,
};

async function drain(parts: AsyncIterable<unknown>): Promise<number> {
  let count = 0;
  for await (const _part of parts) count += 1;
  return count;
}

describe('run starter', () => {
  it('submits a pool route as a model destination with an OpenAI session slot and the run deadline', async () => {
    const { pool, service, starter, spec } = setup();
    const run = await starter.start(poolRoute, spec, new AbortController().signal);
    expect(service.submitted[0]).toMatchObject({
      destination: { kind: 'model', model: 'm' },
      surface: 'openai',
      sessionId: 'openai',
      providerId: 'p',
      timeoutMs: 30_000,
    });
    expect(await drain(run.parts())).toBe(5); // start, two deltas, usage, complete
    run.finish('done');
    expect(service.cancels).toBe(0);
    await run.handle.done;
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('submits model_routes and the fallback as explicit routes (node only when the route names one)', async () => {
    const { service, starter, spec } = setup();
    const route: ResolvedRoute = {
      kind: 'route',
      model: 'codex',
      adapter: 'cli',
      target: 'codex',
      node: 'node-p',
      workspaceRequired: true,
    };
    await (
      await starter.start(route, spec, new AbortController().signal)
    ).handle.done;
    await (
      await starter.start({ ...route, kind: 'fallback', node: '' }, spec, new AbortController().signal)
    ).handle.done;
    expect(service.submitted.map((input) => input.destination)).toEqual([
      { kind: 'route', node: 'node-p', adapter: 'cli', target: 'codex' },
      { kind: 'route', adapter: 'cli', target: 'codex' },
    ]);
  });

  it('collect() reads the whole run into its answer and leaves nothing to cancel', async () => {
    const { pool, service, starter, spec } = setup(textRun(['a', 'b']), 5);
    const signal = new AbortController().signal;
    const run = await starter.start(poolRoute, spec, signal);
    const collected = await run.collect({ includeReasoning: false, inlineReasoning: true });
    expect(collected).toMatchObject({ text: 'ab', finishReason: 'stop', toolCalls: [] });
    run.finish('done');
    expect(service.cancels).toBe(0);
    await run.handle.done;
    expect(abortWatcherCount(signal)).toBe(0);
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('collect() stops when the client goes away: run_incomplete, and finish() cancels the run once', async () => {
    const { service, starter, spec } = setup(textRun(['a', 'b', 'c', 'd']), 20);
    const controller = new AbortController();
    const run = await starter.start(poolRoute, spec, controller.signal);
    const collecting = run.collect({ includeReasoning: false, inlineReasoning: true });
    setTimeout(() => controller.abort(), 30);
    await expect(collecting).rejects.toMatchObject({ code: 'run_incomplete' });
    expect(abortWatcherCount(controller.signal)).toBe(0);
    run.finish('client disconnected');
    await expect(run.handle.done).resolves.toMatchObject({ status: 'cancelled' });
    expect(service.cancels).toBe(1);
  });

  it('stops reading when the client goes away (the same signal cancels the run in the service)', async () => {
    const { pool, service, starter, spec } = setup(textRun(['a', 'b', 'c', 'd']), 20);
    const controller = new AbortController();
    const run = await starter.start(poolRoute, spec, controller.signal);
    const reading = drain(run.parts());
    setTimeout(() => controller.abort(), 30);
    expect(await reading).toBeLessThan(6);
    run.finish('client disconnected');
    await expect(run.handle.done).resolves.toMatchObject({ status: 'cancelled' });
    expect(service.cancels).toBe(1);
    expect(pool.totals()).toEqual({ inFlight: 0, queued: 0 });
  });

  it('leaves no watcher on the signal once its runs were read to the end (one signal serves a whole connection)', async () => {
    const { starter, spec } = setup(textRun(['a', 'b']));
    const signal = new AbortController().signal;
    for (let index = 0; index < 5; index += 1) {
      const run = await starter.start(poolRoute, spec, signal);
      expect(await drain(run.parts())).toBe(textRun(['a', 'b']).length);
      run.finish('client disconnected');
      await run.handle.done;
    }
    // One listener for the signal's life, no run left watching it.
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    expect(abortWatcherCount(signal)).toBe(0);
  });

  it('finish() cancels a run its reader abandoned, once', async () => {
    const { service, starter, spec } = setup(textRun(['a', 'b']), 50);
    const run = await starter.start(poolRoute, spec, new AbortController().signal);
    run.finish('writer failed');
    run.finish('writer failed');
    await expect(run.handle.done).resolves.toMatchObject({ status: 'cancelled', reason: 'writer failed' });
    expect(service.cancels).toBe(1);
  });
});
