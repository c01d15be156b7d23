import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '@iop/clock';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../logging.js';
import type { NodeLink } from './node-link.js';
import { createNodeStore, type NodeStore } from './node-store.js';
import { createTokenRevocation } from './token-revocation.js';

/** The part of a NodeLink the check uses, recording how it was closed. */
function fakeLink(nodeId: string) {
  const closes: string[] = [];
  const link = {
    nodeId,
    info: { remoteAddress: '127.0.0.1:5' },
    close: (reason: string) => {
      closes.push(reason);
      return Promise.resolve();
    },
  } as unknown as NodeLink;
  return { link, closes };
}

describe('token revocation', () => {
  let dir: string;
  let store: NodeStore;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-revocation-'));
    store = createNodeStore({ dataDir: dir, configNodes: [{ id: 'cfg', token: 'dev' }] });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('closes a link with token-revoked once its token is rotated or revoked by another store instance', async () => {
    const a = await store.register('node-a');
    const b = await store.register('node-b');
    const linkA = fakeLink('node-a');
    const linkB = fakeLink('node-b');
    const linkCfg = fakeLink('cfg');
    const links = [linkA.link, linkB.link, linkCfg.link];
    const revocation = createTokenRevocation({
      store,
      registry: { links: () => links },
      logger: silentLogger,
      clock: new ManualClock(),
      intervalMs: 0,
    });
    revocation.track(linkA.link, a.token);
    revocation.track(linkB.link, b.token);
    revocation.track(linkCfg.link, 'dev');
    await revocation.check();
    expect([linkA.closes, linkB.closes, linkCfg.closes]).toEqual([[], [], []]);

    // `iop-edge node register node-a` and `node revoke node-b` run in other processes.
    const cli = createNodeStore({ dataDir: dir });
    await cli.register('node-a');
    await cli.revoke('node-b');
    await revocation.check();
    expect([linkA.closes, linkB.closes, linkCfg.closes]).toEqual([['token-revoked'], ['token-revoked'], []]);
    await revocation.check();
    expect(linkA.closes).toHaveLength(1);
    revocation.stop();
  });

  it('costs one stat per pass while nodes.json is unchanged: no link is re-verified', async () => {
    const a = await store.register('node-a');
    const link = fakeLink('node-a');
    let verifications = 0;
    const counting: Pick<NodeStore, 'verifyDigest' | 'revision'> = {
      revision: () => store.revision(),
      verifyDigest: (nodeId, digest) => {
        verifications += 1;
        return store.verifyDigest(nodeId, digest);
      },
    };
    const revocation = createTokenRevocation({
      store: counting,
      registry: { links: () => [link.link] },
      logger: silentLogger,
      clock: new ManualClock(),
      intervalMs: 0,
    });
    revocation.track(link.link, a.token);
    await revocation.check();
    await revocation.check();
    await revocation.check();
    expect(verifications).toBe(1);
    await createNodeStore({ dataDir: dir }).register('node-b');
    await revocation.check();
    expect(verifications).toBe(2);
    expect(link.closes).toEqual([]);
  });

  it('re-verifies every link of a pass at once (the store serves them from one read)', async () => {
    const links = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        const { token } = await store.register(`node-${index}`);
        return { ...fakeLink(`node-${index}`), token };
      }),
    );
    let inFlight = 0;
    let peak = 0;
    const concurrent: Pick<NodeStore, 'verifyDigest' | 'revision'> = {
      revision: () => store.revision(),
      verifyDigest: async (nodeId, digest) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        try {
          return await store.verifyDigest(nodeId, digest);
        } finally {
          inFlight -= 1;
        }
      },
    };
    const revocation = createTokenRevocation({
      store: concurrent,
      registry: { links: () => links.map((entry) => entry.link) },
      logger: silentLogger,
      clock: new ManualClock(),
      intervalMs: 0,
    });
    for (const entry of links) revocation.track(entry.link, entry.token);
    await createNodeStore({ dataDir: dir }).revoke('node-7');
    await revocation.check();
    expect(peak).toBe(20);
    expect(links.map((entry) => entry.closes.length)).toEqual(links.map((_, index) => (index === 7 ? 1 : 0)));
  });

  it('never disconnects because the store cannot be read', async () => {
    const a = await store.register('node-a');
    const link = fakeLink('node-a');
    const broken: Pick<NodeStore, 'verifyDigest' | 'revision'> = {
      revision: () => Promise.reject(new Error('EACCES')),
      verifyDigest: () => Promise.resolve({ ok: false, reason: 'unknown_node' }),
    };
    const revocation = createTokenRevocation({
      store: broken,
      registry: { links: () => [link.link] },
      logger: silentLogger,
      clock: new ManualClock(),
      intervalMs: 0,
    });
    revocation.track(link.link, a.token);
    await revocation.check();
    expect(link.closes).toEqual([]);
  });

  it('runs by itself every intervalMs', async () => {
    const a = await store.register('node-a');
    const link = fakeLink('node-a');
    const clock = new ManualClock();
    let passes = 0;
    const revocation = createTokenRevocation({
      store: {
        verifyDigest: (nodeId, digest) => store.verifyDigest(nodeId, digest),
        revision: () => {
          passes += 1;
          return store.revision();
        },
      },
      registry: { links: () => [link.link] },
      logger: silentLogger,
      clock,
      intervalMs: 20,
    });
    revocation.start();
    revocation.start();
    expect(clock.pendingDelays()).toEqual([20]);
    try {
      revocation.track(link.link, a.token);
      await store.revoke('node-a');
      clock.advance(19);
      expect(passes).toBe(0);
      clock.advance(1);
      expect(passes).toBe(1);
      // check() joins the pass the timer started.
      await revocation.check();
      expect(passes).toBe(1);
      expect(link.closes).toEqual(['token-revoked']);
      expect(clock.pendingDelays()).toEqual([20]);
    } finally {
      revocation.stop();
    }
    expect(clock.pending).toBe(0);
  });
});
