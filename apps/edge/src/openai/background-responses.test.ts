import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { silentLogger } from '../logging.js';
import type { Clock } from '../clock.js';
import { createProviderPool } from '../pool/provider-pool.js';
import { connectAll, FakeNodes, poolConfig, providerConfig } from '../pool/test-support/pool-fixture.js';
import { BackgroundResponses } from './background-responses.js';
import { OpenAIHttpError } from './openai-error.js';
import type { ResponsesOutputContext } from './responses-output.js';
import { createRunStarter } from './run-starter.js';
import type { RunSpec } from './run-spec.js';
import { FakeEdgeService, textRun } from '../test-support/fake-edge-service.js';
import { eventually } from './test-support/openai-harness.js';

const spec: RunSpec = {
  messages: [create.chatMessage({ role: 'user', content: 'hi' })],
  tools: [],
  params: create.generationParams({}),
  metadata: {},
  reasoningRequested: false,
  includeReasoning: false,
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
  const store = new BackgroundResponses({
    runs,
    clock,
    logger: silentLogger,
    maxEntries: 2,
    ttlMs: 1000,
  });
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
  return { store, route, context, pool, service, advance: (ms: number) => (now += ms) };
}

describe('BackgroundResponses', () => {
  it('evicts the oldest finished response when full and refuses when all are running', async () => {
    const { store, route, context, pool } = setup(0);
    store.start(context('r1'), route, spec, output);
    store.start(context('r2'), route, spec, output);
    await eventually(() => {
      expect(store.get('r1')['status']).toBe('completed');
      expect(store.get('r2')['status']).toBe('completed');
    });
    store.start(context('r3'), route, spec, output);
    expect(() => store.get('r1')).toThrow(OpenAIHttpError);
    expect(store.size).toBe(2);
    await eventually(() => expect(store.get('r3')['status']).toBe('completed'));
    pool.close();
  });

  it('refuses a new response when every slot is running, forgets finished ones after the TTL, cancels on close', async () => {
    const { store, route, context, pool, service, advance } = setup(200);
    store.start(context('r1'), route, spec, output);
    store.start(context('r2'), route, spec, output);
    expect(() => store.start(context('r3'), route, spec, output)).toThrow(/already running/);
    store.close();
    expect(store.get('r1')['status']).toBe('cancelled');
    await eventually(() => {
      expect(service.active).toBe(0);
      expect(pool.totals().inFlight).toBe(0);
    });
    advance(1001);
    expect(() => store.get('r1')).toThrow(/No response/);
    expect(() => store.start(context('r4'), route, spec, output)).toThrow(/shutting down/);
    pool.close();
  });
});
