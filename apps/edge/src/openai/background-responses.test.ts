import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { silentLogger } from '../logging.js';
import type { Clock } from '../clock.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { connectAll, FakeNodes, poolConfig, providerConfig } from '../pool/test-support/pool-fixture.js';
import { BackgroundResponses } from './background-responses.js';
import { RunRegistry } from '../service/run-registry.js';
import { OpenAIHttpError } from './openai-error.js';
import type { ResponsesOutputContext } from './responses-output.js';
import { createRunStarter } from '../surface-kit/run-starter.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';
import { FakeEdgeService, textRun } from '../test-support/fake-edge-service.js';
import { eventually } from '../surface-kit/test-support/surface-harness.js';

const spec: SurfaceRun = {
  spec: {
    session: { kind: 'slot', baseId: 'openai' },
    messages: [create.chatMessage({ role: 'user', content: 'hi' })],
    tools: [],
    params: create.generationParams({}),
    metadata: {},
    reasoningRequested: false,
  },
  caller: { includeReasoning: false },
};
const output = { includeReasoning: false, inlineReasoning: false };

function setup(delayMs: number) {
  let now = 1_000_000;
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
  };
  const config = poolConfig([providerConfig('a', { capacity: 10 })]);
  const nodes = new FakeNodes();
  connectAll(nodes, config);
  const pool = createProviderPool({ config, nodes });
  // The fake admits model runs through the real pool, as the service does.
  const service = new FakeEdgeService(() => ({ parts: textRun(['ok']), delayMs }), nodes.list, pool);
  const runs = createRunStarter({
    service,
    logger: silentLogger,
    sessionId: 's',
    timeoutMs: 0,
  });
  const registry = new RunRegistry({ clock, bounds: { 'openai.response': { maxEntries: 2, ttlMs: 1000 } } });
  const store = new BackgroundResponses({ runs, registry, logger: silentLogger, clock });
  const modelConfig = pool.model('m');
  if (!modelConfig) throw new Error('model missing');
  const route = { kind: 'pool' as const, model: 'm', modelConfig, workspaceRequired: false as const };
  const context = (id: string): ResponsesOutputContext => ({
    id,
    createdAt: 1,
    model: 'm',
    request: { model: 'm', input: 'x' },
    output,
  });
  return { store, registry, route, context, pool, service, advance: (ms: number) => (now += ms) };
}

describe('BackgroundResponses', () => {
  it('evicts the oldest finished response when full and refuses when all are running', async () => {
    const { store, route, context, pool } = setup(0);
    store.start(context('r1'), route, spec, output);
    store.start(context('r2'), route, spec, output);
    await eventually(async () => {
      expect((await store.get('r1'))['status']).toBe('completed');
      expect((await store.get('r2'))['status']).toBe('completed');
    });
    store.start(context('r3'), route, spec, output);
    await expect(store.get('r1')).rejects.toThrow(OpenAIHttpError);
    expect(store.size).toBe(2);
    await eventually(async () => expect((await store.get('r3'))['status']).toBe('completed'));
    pool.close();
  });

  it('refuses a new response when every slot is running, forgets finished ones after the TTL, cancels on close', async () => {
    const { store, route, context, pool, service, advance } = setup(200);
    store.start(context('r1'), route, spec, output);
    store.start(context('r2'), route, spec, output);
    expect(() => store.start(context('r3'), route, spec, output)).toThrow(
      expect.objectContaining({ status: 429, code: 'too_many_background_responses' }),
    );
    store.close();
    expect((await store.get('r1'))['status']).toBe('cancelled');
    await eventually(() => {
      expect(service.active).toBe(0);
      expect(pool.totals().inFlight).toBe(0);
    });
    advance(1001);
    await expect(store.get('r1')).rejects.toThrow(/No response/);
    expect(() => store.start(context('r4'), route, spec, output)).toThrow(/shutting down/);
    pool.close();
  });

  it("keeps keys apart: team-a neither reads nor cancels team's response, and is told 404 like for an unknown id", async () => {
    const { store, route, context, pool, service } = setup(200);
    const team = { ...spec, caller: { ...spec.caller, principal: { id: 'team' } } } as SurfaceRun;
    store.start(context('r1'), route, team, output);
    const unknown = await store.get('nope', 'team-a').catch((error: unknown) => error);
    for (const attempt of [store.get('r1', 'team-a'), store.cancel('r1', 'team-a'), store.get('r1')]) {
      const error = await attempt.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAIHttpError);
      expect((error as OpenAIHttpError).status).toBe(404);
      expect((error as OpenAIHttpError).message).toBe(
        (unknown as OpenAIHttpError).message.replace('nope', 'r1'),
      );
    }
    expect((await store.get('r1', 'team'))['status']).not.toBe('cancelled');
    expect((await store.cancel('r1', 'team'))['status']).toBe('cancelled');
    await eventually(() => {
      expect(service.active).toBe(0);
      expect(pool.totals().inFlight).toBe(0);
    });
    // A finished response is returned unchanged by a second cancel.
    expect((await store.cancel('r1', 'team'))['status']).toBe('cancelled');
    pool.close();
  });
});
