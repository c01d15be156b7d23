import { describe, it, expect } from '@jest/globals';
import { envelope as build, type Envelope, type NodeConfigPayload } from '@iop/wire';
import { silentLogger } from '../logging.js';
import { mapNodeConfig, payloadForNode } from './mapper.js';
import { createNodeConfigState } from './node-config-push.js';
import { NodeLink } from './node-link.js';
import { createNodeRegistry, type NodeRegistry } from './node-registry.js';
import { FakeChannel, linkInfo } from './test-support/fake-channel.js';
import { testNode } from './test-support/config-fixture.js';

type Answer = 'ack' | 'refuse' | 'ignore';

/** A connected node whose answers to config refreshes the test scripts; records every payload it was sent. */
function connect(registry: NodeRegistry, nodeId: string, payload: NodeConfigPayload) {
  const channel = new FakeChannel();
  const link = new NodeLink({
    channel,
    info: linkInfo(nodeId),
    payload,
    logger: silentLogger,
    requestTimeoutMs: 1000,
  });
  const node = { link, answers: [] as Answer[], received: [] as NodeConfigPayload[] };
  channel.onSend((sent: Envelope) => {
    if (sent.msg?.$case !== 'nodeConfigRefreshRequest') return;
    const config = sent.msg.nodeConfigRefreshRequest.config;
    if (config) node.received.push(config);
    const answer = node.answers.shift() ?? 'ack';
    if (answer === 'ignore') return;
    queueMicrotask(() =>
      link.handle(
        build.nodeConfigRefreshResult(sent.requestId, {
          revision: config?.revision ?? '',
          ok: answer === 'ack',
          error: answer === 'ack' ? '' : 'adapter rebuild failed',
        }),
      ),
    );
  });
  registry.add(link);
  return node;
}

function nodesWith(maxConcurrency: number) {
  return ['a', 'b'].map((id) =>
    testNode({ id, alias: id, runtime: { ...testNode().runtime, max_concurrency: maxConcurrency } }),
  );
}

describe('createNodeConfigState', () => {
  it('commits and hands out the new payloads only after every connected node acknowledged', async () => {
    const registry = createNodeRegistry();
    const before = nodesWith(4);
    const after = nodesWith(8);
    const state = createNodeConfigState(registry, before);
    const a = connect(registry, 'a', mapNodeConfig(before[0]));
    const b = connect(registry, 'b', mapNodeConfig(before[1]));
    let committedWhile: number | undefined;
    const outcome = await state.apply(after, {
      timeoutMs: 500,
      commit: () => (committedWhile = state.payloadFor('a').maxConcurrency),
    });
    expect(outcome.status).toBe('applied');
    // commit runs before the state switches, once both acknowledged.
    expect(committedWhile).toBe(4);
    expect(outcome.results.map((result) => [result.node_id, result.status])).toEqual([
      ['a', 'applied'],
      ['b', 'applied'],
    ]);
    expect(a.received.map((payload) => payload.maxConcurrency)).toEqual([8]);
    expect(b.received.map((payload) => payload.maxConcurrency)).toEqual([8]);
    expect(state.payloadFor('a').maxConcurrency).toBe(8);
    expect(state.nodes()).toBe(after);
    expect(registry.get('b')?.payload.maxConcurrency).toBe(8);
  });

  it('one refusal rejects the whole refresh: the acknowledging node gets its previous payload back', async () => {
    const registry = createNodeRegistry();
    const before = nodesWith(4);
    const state = createNodeConfigState(registry, before);
    const a = connect(registry, 'a', mapNodeConfig(before[0]));
    const b = connect(registry, 'b', mapNodeConfig(before[1]));
    b.answers.push('refuse');
    let commits = 0;
    const outcome = await state.apply(nodesWith(8), { timeoutMs: 500, commit: () => (commits += 1) });
    expect(outcome.status).toBe('rejected');
    expect(outcome.error).toBe('');
    expect(commits).toBe(0);
    expect(outcome.results).toEqual([
      { node_id: 'a', status: 'reverted', revision: payloadForNode(before, 'a').revision, error: '' },
      {
        node_id: 'b',
        status: 'failed',
        revision: payloadForNode(before, 'b').revision,
        error: 'adapter rebuild failed',
      },
    ]);
    expect(a.received.map((payload) => payload.maxConcurrency)).toEqual([8, 4]);
    expect(b.received.map((payload) => payload.maxConcurrency)).toEqual([8]);
    expect(state.payloadFor('a').maxConcurrency).toBe(4);
    expect(state.nodes()).toBe(before);
    expect(registry.get('a')?.payload.revision).toBe(payloadForNode(before, 'a').revision);
  });

  it('a node that does not answer is a timeout, is sent its previous payload again, and rejects the refresh', async () => {
    const registry = createNodeRegistry();
    const before = nodesWith(4);
    const state = createNodeConfigState(registry, before);
    const a = connect(registry, 'a', mapNodeConfig(before[0]));
    a.answers.push('ignore');
    const outcome = await state.apply(nodesWith(8), { timeoutMs: 50 });
    expect(outcome.status).toBe('rejected');
    expect(outcome.results).toHaveLength(2);
    expect(outcome.results[0]).toMatchObject({ node_id: 'a', status: 'timeout' });
    expect(outcome.results[0]?.error).toMatch(
      /timed out after 50 ms; then acknowledged its previous payload$/,
    );
    // 'b' is configured but not connected: it registers with whatever is in force (the previous payload).
    expect(outcome.results[1]).toMatchObject({ node_id: 'b', status: 'not_connected' });
    expect(a.received.map((payload) => payload.maxConcurrency)).toEqual([8, 4]);
    expect(state.payloadFor('b').maxConcurrency).toBe(4);
  });

  it('a commit that throws reverts the nodes and reports why', async () => {
    const registry = createNodeRegistry();
    const before = nodesWith(4);
    const state = createNodeConfigState(registry, before);
    const a = connect(registry, 'a', mapNodeConfig(before[0]));
    const outcome = await state.apply(nodesWith(8), {
      commit: () => {
        throw new Error('pool exploded');
      },
    });
    expect(outcome.status).toBe('rejected');
    expect(outcome.error).toBe('the edge could not switch to the new configuration: pool exploded');
    expect(outcome.results[0]).toMatchObject({ node_id: 'a', status: 'reverted' });
    expect(a.received.map((payload) => payload.maxConcurrency)).toEqual([8, 4]);
    expect(state.payloadFor('a').maxConcurrency).toBe(4);
  });

  it('a node refusing its previous payload back is revert_failed, and a later refresh sends it again', async () => {
    const registry = createNodeRegistry();
    const before = nodesWith(4);
    const state = createNodeConfigState(registry, before);
    const a = connect(registry, 'a', mapNodeConfig(before[0]));
    const b = connect(registry, 'b', mapNodeConfig(before[1]));
    a.answers.push('ack', 'refuse');
    b.answers.push('refuse');
    const outcome = await state.apply(nodesWith(8), {});
    expect(outcome.results[0]).toMatchObject({
      node_id: 'a',
      status: 'revert_failed',
      error: 'previous payload not acknowledged (failed: adapter rebuild failed)',
    });
    // The edge knows 'a' still runs the new payload, so the next refresh (back to the old values) is sent to it.
    const again = await state.apply(before, {});
    expect(again.status).toBe('applied');
    expect(again.results.map((result) => [result.node_id, result.status])).toEqual([
      ['a', 'applied'],
      ['b', 'unchanged'],
    ]);
  });
});
