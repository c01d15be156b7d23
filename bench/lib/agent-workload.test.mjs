// Tests of the affinity bench's agent workload and of the phase's metric parsing, against real prefix-cache
// backends on 127.0.0.1 (node --test bench/lib/).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { affinityCounts, affinityHitRate } from './affinity-phase.mjs';
import { conversationText, filler, runAgentWorkload } from './agent-workload.mjs';
import { startPrefixCacheBackend } from './prefix-cache-backend.mjs';

const shape = {
  seed: 'test',
  conversations: 4,
  turns: 3,
  concurrency: 2,
  thinkMs: [0, 2],
  startSpreadMs: 5,
  systemTokens: 50,
  taskTokens: 40,
  turnTokens: 10,
};

const backendOptions = (name) => ({
  name,
  firstTokenBaseMs: 1,
  msPerUnseenToken: 0.01,
  capacityTokens: 100_000,
  answerTokens: 4,
  tokenIntervalMs: 0,
});

async function stats(backend) {
  return (await fetch(`${backend.url}/stats`)).json();
}

describe('agent workload', () => {
  let backends;
  before(async () => {
    backends = await Promise.all(['w0', 'w1'].map((name) => startPrefixCacheBackend(backendOptions(name))));
  });
  after(() => Promise.all(backends.map((backend) => backend.close())));

  it('writes the same prompts for the same seed, a task of its own per conversation and one shared system prompt', () => {
    assert.equal(filler('x', 7, 25), filler('x', 7, 25));
    assert.ok(filler('x', 7, 25).length >= 100);
    const a = conversationText(shape, 0);
    const b = conversationText(shape, 1);
    assert.equal(a.system, b.system);
    assert.notEqual(a.task, b.task);
    assert.notEqual(a.toolResult(1), a.toolResult(2));
    assert.equal(a.toolResult(1), conversationText(shape, 0).toolResult(1));
    assert.notEqual(conversationText({ ...shape, seed: 'other' }, 0).task, a.task);
  });

  it('sends every turn with the growing context, so a backend that served the last turn has all but the new message', async () => {
    const result = await runAgentWorkload({
      urlFor: (index) => backends[index % 2].url,
      providerOf: (index) => `w${index % 2}`,
      model: 'bench-model',
      shape,
      sessionHeader: false,
    });
    assert.equal(result.errors, 0);
    assert.equal(result.completed, shape.conversations * shape.turns);
    assert.equal(result.ttft.count, 12);
    assert.equal(result.ttft_first_turns.count, 4);
    assert.equal(result.follow_ups, 8);
    assert.equal(result.same_provider_follow_ups, 8);
    assert.deepEqual(result.providers, { w0: 6, w1: 6 });
    const counted = await Promise.all(backends.map(stats));
    for (const backend of counted) {
      assert.equal(backend.requests, 6);
      assert.equal(backend.first_turns, 2);
      assert.equal(backend.follow_ups, 4);
      // Pinned: every follow-up found its previous turn (and the answer the client sent back) cached.
      assert.equal(backend.follow_up_hits, 4);
      assert.ok(backend.max_in_flight <= 2);
    }
  });

  it('sends x-session-id per conversation when asked, and counts a failing turn as an error that ends the conversation', async () => {
    const seen = [];
    const { createServer } = await import('node:http');
    const server = createServer((request, response) => {
      seen.push(request.headers['x-session-id']);
      request.resume();
      response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"down"}}');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const result = await runAgentWorkload({
        url: `http://127.0.0.1:${server.address().port}`,
        model: 'bench-model',
        shape: { ...shape, conversations: 2 },
        sessionHeader: true,
        sessionPrefix: 'conv-t',
      });
      assert.equal(result.completed, 0);
      assert.equal(result.errors, 2);
      assert.equal(result.first_errors[0].status, 503);
      assert.deepEqual(seen.sort(), ['conv-t-0', 'conv-t-1']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('counts a stream that ends in an error event as a failed turn, though content came first', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"choices":[{"index":0,"delta":{"content":"part"}}]}\n\n');
      response.end('data: {"error":{"message":"backend lost","code":"upstream_error"}}\n\ndata: [DONE]\n\n');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const result = await runAgentWorkload({
        url: `http://127.0.0.1:${server.address().port}`,
        model: 'bench-model',
        shape: { ...shape, conversations: 1 },
        sessionHeader: false,
      });
      assert.equal(result.completed, 0);
      assert.equal(result.errors, 1);
      assert.match(result.first_errors[0].error, /backend lost/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('affinity metric', () => {
  const page = [
    '# HELP iop_affinity_total Placements by affinity result.',
    '# TYPE iop_affinity_total counter',
    'iop_affinity_total{model="m",result="hit"} 30',
    'iop_affinity_total{result="hit",model="n"} 6',
    'iop_affinity_total{model="m",result="miss"} 4',
    'iop_affinity_total{model="m",result="spill"} 2',
    'iop_affinity_totals{result="hit"} 1000',
  ].join('\n');

  it('sums iop_affinity_total by result whatever the other labels, and is absent when the edge has no such metric', () => {
    assert.deepEqual(affinityCounts(page), { hit: 36, miss: 4, spill: 2 });
    assert.equal(affinityCounts('iop_nodes_connected 1\n'), undefined);
  });

  it('takes the hit rate of what happened between two scrapes', () => {
    const before = { hit: 6, miss: 1 };
    const rate = affinityHitRate(before, { hit: 36, miss: 4, spill: 2 });
    assert.deepEqual(rate.counts, { hit: 30, miss: 3, spill: 2 });
    assert.equal(rate.rate, 30 / 35);
    assert.equal(affinityHitRate(before, undefined), undefined);
    assert.ok(Number.isNaN(affinityHitRate(before, before).rate));
  });
});
