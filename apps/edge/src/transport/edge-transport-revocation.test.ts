// Live revocation through the real transport: a connected node whose token is rotated or revoked by another
// process (another NodeStore on the same data dir, as `iop-edge node register|revoke` is) gets Goodbye
// `token-revoked` within 2 s, and its reconnect with the old token is refused.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RegisterRejectCode } from '@iop/wire';
import { createEventBus } from '../events/event-bus.js';
import { createNodeRegistry } from '../node/node-registry.js';
import { createNodeStore } from '../node/node-store.js';
import { testEdgeConfig } from '../node/test-support/config-fixture.js';
import { startNodeTransport } from '../node/node-transport.js';
import type { EdgeTransport } from './edge-transport.js';
import { connectFakeNode, recordingLogger, waitUntil } from './test-support/fake-node.js';

let dataDir: string;
let transport: EdgeTransport | undefined;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-revoke-'));
});

afterEach(async () => {
  await transport?.stop();
  transport = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

async function start() {
  const config = testEdgeConfig({ edge: { data_dir: dataDir } });
  const store = createNodeStore({ dataDir });
  const registry = createNodeRegistry();
  transport = await startNodeTransport({
    config,
    store,
    registry,
    events: createEventBus(),
    logger: recordingLogger(),
  });
  return { address: transport.address, registry };
}

describe('live token revocation', () => {
  it.each([
    ['rotated', 'bad_token', RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN],
    ['revoked', 'unknown_node', RegisterRejectCode.REGISTER_REJECT_CODE_UNKNOWN_NODE],
  ] as const)(
    'a connected node whose token is %s is closed within 2 s and refused (%s)',
    async (change, _name, code) => {
      const cli = createNodeStore({ dataDir });
      const { token } = await cli.register('n-live');
      const { address, registry } = await start();
      const node = await connectFakeNode(address, { nodeId: 'n-live', token });
      expect(node.response.accepted).toBe(true);

      const changedAt = Date.now();
      if (change === 'rotated') await cli.register('n-live');
      else await cli.revoke('n-live');
      const goodbye = await node.waitFor('goodbye', 2000);
      expect(Date.now() - changedAt).toBeLessThan(2000);
      expect(goodbye.msg?.$case === 'goodbye' && goodbye.msg.goodbye.reason).toBe('token-revoked');
      await waitUntil(
        () => registry.get('n-live') === undefined,
        2000,
        'the closed link leaves the registry',
      );

      const again = await connectFakeNode(address, { nodeId: 'n-live', token });
      expect(again.response.accepted).toBe(false);
      expect(again.response.rejectCode).toBe(code);
    },
  );

  it('leaves nodes whose token is still valid connected', async () => {
    const cli = createNodeStore({ dataDir });
    const kept = await cli.register('n-kept');
    const other = await cli.register('n-other');
    const { address, registry } = await start();
    const node = await connectFakeNode(address, { nodeId: 'n-kept', token: kept.token });
    const rotated = await connectFakeNode(address, { nodeId: 'n-other', token: other.token });
    await cli.register('n-other');
    await rotated.waitFor('goodbye', 2000);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(node.frames.some((envelope) => envelope.msg?.$case === 'goodbye')).toBe(false);
    expect(registry.get('n-kept')).toBeDefined();
  });
});
