import { systemClock } from '../clock.js';
import { describe, it, expect, beforeEach, afterEach, jest } from '@jest/globals';
import { promises as fsPromises } from 'node:fs';
import { chown, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createNodeStore, NODE_STORE_FILE } from './node-store.js';
import { digestsEqual, sha256Hex } from './token-digest.js';
import { NodeStoreError } from './errors.js';

let dataDir: string;

beforeEach(async () => {
  dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'iop-node-store-')), 'data');
});

afterEach(async () => {
  await rm(path.dirname(dataDir), { recursive: true, force: true });
});

describe('createNodeStore', () => {
  it('registers a node with a fresh iop_ token, stores only its digest with mode 0600, and verifies it', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = createNodeStore({ dataDir, clock: { ...systemClock, now: () => now } });
    const result = await store.register('node-a');
    expect(result.token).toMatch(/^iop_[A-Za-z0-9_-]{43}$/);
    expect(result.rotated).toBe(false);
    expect(result.record).toEqual({
      node_id: 'node-a',
      token_sha256: sha256Hex(result.token),
      created_at: '2026-01-01T00:00:00.000Z',
      rotated_at: '2026-01-01T00:00:00.000Z',
    });
    const file = path.join(dataDir, NODE_STORE_FILE);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(result.token);
    expect(JSON.parse(text)).toEqual({ version: 1, nodes: [result.record] });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await expect(store.verify('node-a', result.token)).resolves.toEqual({ ok: true, source: 'store' });
    await expect(store.verify('node-a', `${result.token}x`)).resolves.toEqual({
      ok: false,
      reason: 'bad_token',
    });
    await expect(store.verify('node-b', result.token)).resolves.toEqual({
      ok: false,
      reason: 'unknown_node',
    });

    now += 60_000;
    const rotated = await store.register('node-a');
    expect(rotated.rotated).toBe(true);
    expect(rotated.token).not.toBe(result.token);
    expect(rotated.record.created_at).toBe('2026-01-01T00:00:00.000Z');
    expect(rotated.record.rotated_at).toBe('2026-01-01T00:01:00.000Z');
    await expect(store.verify('node-a', result.token)).resolves.toEqual({ ok: false, reason: 'bad_token' });
    await expect(store.verify('node-a', rotated.token)).resolves.toEqual({ ok: true, source: 'store' });
  });

  it('leaves no temp files behind and keeps every node across concurrent registrations', async () => {
    const store = createNodeStore({ dataDir });
    const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => store.register(`node-${id}`)));
    expect((await store.list()).map((record) => record.node_id)).toEqual([
      'node-a',
      'node-b',
      'node-c',
      'node-d',
      'node-e',
    ]);
    for (const [index, id] of ['a', 'b', 'c', 'd', 'e'].entries()) {
      await expect(store.verify(`node-${id}`, results[index]?.token ?? '')).resolves.toMatchObject({
        ok: true,
      });
    }
    expect(await readdir(dataDir)).toEqual([NODE_STORE_FILE]);
  });

  it('sees a registration written by another process (another store instance) without a restart', async () => {
    const running = createNodeStore({ dataDir });
    await expect(running.verify('late', 'iop_x')).resolves.toEqual({ ok: false, reason: 'unknown_node' });
    const cli = createNodeStore({ dataDir });
    const { token } = await cli.register('late');
    await expect(running.knows('late')).resolves.toBe(true);
    await expect(running.verify('late', token)).resolves.toEqual({ ok: true, source: 'store' });
    const rotated = await cli.register('late');
    await expect(running.verify('late', token)).resolves.toEqual({ ok: false, reason: 'bad_token' });
    await expect(running.verify('late', rotated.token)).resolves.toEqual({ ok: true, source: 'store' });
  });

  it('reads nodes.json again only when it changed, once for verifications that arrive together', async () => {
    const cli = createNodeStore({ dataDir });
    const tokens = await Promise.all(['a', 'b', 'c'].map(async (id) => (await cli.register(id)).token));
    const running = createNodeStore({ dataDir });
    const reads = jest.spyOn(fsPromises, 'readFile');
    try {
      const verifyBurst = () =>
        Promise.all(
          Array.from({ length: 30 }, (_, index) =>
            running.verify(['a', 'b', 'c'][index % 3], tokens[index % 3]),
          ),
        );
      expect((await verifyBurst()).every((verdict) => verdict.ok)).toBe(true);
      expect(reads).toHaveBeenCalledTimes(1);
      // Unchanged file: no read at all.
      expect((await verifyBurst()).every((verdict) => verdict.ok)).toBe(true);
      expect(reads).toHaveBeenCalledTimes(1);
      // Changed by another process: the very next verification sees it.
      const { token } = await cli.register('d');
      reads.mockClear();
      await expect(running.verify('d', token)).resolves.toEqual({ ok: true, source: 'store' });
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('accepts the config dev token and the config digest as well as the stored token', async () => {
    const digest = sha256Hex('iop_digest_token');
    const store = createNodeStore({
      dataDir,
      configNodes: [
        { id: 'dev', token: 'iop_dev_token' },
        { id: 'prod', token_sha256: digest.toUpperCase() },
        { id: 'bare' },
      ],
    });
    await expect(store.verify('dev', 'iop_dev_token')).resolves.toEqual({ ok: true, source: 'config-token' });
    await expect(store.verify('dev', 'iop_dev_tokem')).resolves.toEqual({ ok: false, reason: 'bad_token' });
    await expect(store.verify('prod', 'iop_digest_token')).resolves.toEqual({
      ok: true,
      source: 'config-digest',
    });
    await expect(store.verify('bare', '')).resolves.toEqual({ ok: false, reason: 'bad_token' });
    const { token } = await store.register('bare');
    await expect(store.verify('bare', token)).resolves.toEqual({ ok: true, source: 'store' });
    await expect(store.knows('prod')).resolves.toBe(true);
    expect((await store.list()).map((record) => record.node_id)).toEqual(['bare']);
  });

  it('rejects invalid node ids with a typed error', async () => {
    const store = createNodeStore({ dataDir });
    for (const bad of ['', '-x', 'a b', 'x'.repeat(65), '../etc']) {
      await expect(store.register(bad)).rejects.toMatchObject({
        name: 'NodeStoreError',
        code: 'invalid_node_id',
      });
    }
    await expect(store.register('ok-after-failures')).resolves.toMatchObject({ rotated: false });
  });

  it('reports a corrupt store file as store_corrupt instead of treating it as empty', async () => {
    const store = createNodeStore({ dataDir });
    await store.register('x');
    await writeFile(path.join(dataDir, NODE_STORE_FILE), '{"version":1,"nodes":[{"node_id":"x"}]}');
    const error = await store.verify('x', 'y').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NodeStoreError);
    expect(error).toMatchObject({ code: 'store_corrupt' });
    await writeFile(path.join(dataDir, NODE_STORE_FILE), 'not json');
    await expect(store.list()).rejects.toMatchObject({ code: 'store_corrupt' });
  });
});

describe('digestsEqual', () => {
  it('compares digests and refuses malformed ones', () => {
    const digest = sha256Hex('a');
    expect(digestsEqual(digest, digest.toUpperCase())).toBe(true);
    expect(digestsEqual(digest, sha256Hex('b'))).toBe(false);
    expect(digestsEqual(digest, 'zz')).toBe(false);
  });

  it('verifies a token by its digest, and revokes a stored token (config secrets stay)', async () => {
    const store = createNodeStore({ dataDir, configNodes: [{ id: 'cfg', token: 'dev-token' }] });
    const { token } = await store.register('node-a');
    await expect(store.verifyDigest('node-a', sha256Hex(token))).resolves.toEqual({
      ok: true,
      source: 'store',
    });
    await expect(store.revoke('node-a')).resolves.toBe(true);
    await expect(store.revoke('node-a')).resolves.toBe(false);
    await expect(store.verify('node-a', token)).resolves.toEqual({ ok: false, reason: 'unknown_node' });
    await expect(store.revoke('cfg')).resolves.toBe(false);
    await expect(store.verify('cfg', 'dev-token')).resolves.toEqual({ ok: true, source: 'config-token' });
  });

  it('keeps accepting edge.yaml tokens when nodes.json is unreadable, and reports it once per problem', async () => {
    const reported: string[] = [];
    const store = createNodeStore({
      dataDir,
      configNodes: [{ id: 'cfg', token: 'dev-token' }],
      onUnreadable: (error) => reported.push(error.code),
    });
    await store.register('node-a');
    await writeFile(path.join(dataDir, NODE_STORE_FILE), '{ not json');
    await expect(store.verify('cfg', 'dev-token')).resolves.toEqual({ ok: true, source: 'config-token' });
    await expect(store.verify('cfg', 'dev-token')).resolves.toEqual({ ok: true, source: 'config-token' });
    await expect(store.verify('node-a', 'anything')).resolves.toEqual({ ok: false, reason: 'unknown_node' });
    expect(reported).toEqual(['store_corrupt']);
    // Without the callback an unreadable store is still an error (registration rejects and logs it).
    await expect(createNodeStore({ dataDir }).verify('cfg', 'x')).rejects.toBeInstanceOf(NodeStoreError);
  });

  it('as root, gives the rewritten nodes.json back to its owner (the service user)', async () => {
    await createNodeStore({ dataDir }).register('node-a');
    const file = path.join(dataDir, NODE_STORE_FILE);
    let expected: [number, number];
    if (process.getuid?.() === 0) {
      // Really root: make the file another user's, as `setup` leaves it for the service user.
      await chown(file, 4242, 4242);
      expected = [4242, 4242];
    } else {
      const owner = await stat(file);
      expected = [owner.uid, owner.gid];
    }
    const chowned: Array<[string, number, number]> = [];
    const asRoot = createNodeStore({
      dataDir,
      uid: () => 0,
      chown: (target, uid, gid) => {
        chowned.push([path.basename(target), uid, gid]);
        return chown(target, uid, gid).catch(() => undefined);
      },
    });
    await asRoot.register('node-b');
    expect(chowned).toHaveLength(1);
    expect(chowned[0]?.[0]).toMatch(/^nodes\.json\.\d+\.[0-9a-f]+\.tmp$/);
    expect(chowned[0]?.slice(1)).toEqual(expected);
  });

  it('as another non-root user, refuses with the sudo -u hint instead of writing a file the service cannot read', async () => {
    const store = createNodeStore({ dataDir });
    await store.register('node-a');
    const owner = await stat(path.join(dataDir, NODE_STORE_FILE));
    const stranger = createNodeStore({ dataDir, uid: () => owner.uid + 1 });
    await expect(stranger.register('node-b')).rejects.toThrow(
      `sudo -u '#${owner.uid}' iop-edge node register`,
    );
    expect((await store.list()).map((record) => record.node_id)).toEqual(['node-a']);
  });
});
