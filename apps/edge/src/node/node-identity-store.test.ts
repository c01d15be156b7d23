import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { identityFingerprint } from '@iop/wire';
import {
  createNodeIdentityStore,
  NODE_IDENTITY_FILE,
  type NodeIdentityRecord,
} from './node-identity-store.js';

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-identities-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function key(): Buffer {
  return generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
}

const TOKEN_A = 'a'.repeat(64);
const always = (): Promise<boolean> => Promise.resolve(true);

describe('node identity store', () => {
  it('records the first key, matches it again, refuses another, and keeps the file 0600', async () => {
    const store = createNodeIdentityStore({ dataDir });
    const first = key();
    const recorded = await store.claim('gpu-01', first, TOKEN_A, always);
    expect(recorded).toMatchObject({
      outcome: 'recorded',
      record: { fingerprint: identityFingerprint(first) },
    });
    expect((await store.claim('gpu-01', first, TOKEN_A, always)).outcome).toBe('match');
    const other = await store.claim('gpu-01', key(), TOKEN_A, always);
    expect(other).toMatchObject({ outcome: 'mismatch', record: { fingerprint: identityFingerprint(first) } });
    expect((await stat(path.join(dataDir, NODE_IDENTITY_FILE))).mode & 0o777).toBe(0o600);

    // A new store (an edge restart) reads the same record back.
    const reread = createNodeIdentityStore({ dataDir });
    expect((await reread.current('gpu-01', always))?.fingerprint).toBe(identityFingerprint(first));
  });

  it('lets a new key replace a record whose token is no longer accepted (a rotation)', async () => {
    const store = createNodeIdentityStore({ dataDir });
    await store.claim('gpu-01', key(), TOKEN_A, always);
    const rotated = (record: NodeIdentityRecord): Promise<boolean> =>
      Promise.resolve(record.token_sha256 !== TOKEN_A);
    expect(await store.current('gpu-01', rotated)).toBeUndefined();
    const next = key();
    const claim = await store.claim('gpu-01', next, 'b'.repeat(64), rotated);
    expect(claim).toMatchObject({ outcome: 'recorded', record: { fingerprint: identityFingerprint(next) } });
  });

  it('lets only one of two racing first registrations record', async () => {
    const store = createNodeIdentityStore({ dataDir });
    const outcomes = await Promise.all([
      store.claim('gpu-01', key(), TOKEN_A, always),
      store.claim('gpu-01', key(), TOKEN_A, always),
    ]);
    expect(outcomes.map((claim) => claim.outcome).sort()).toEqual(['mismatch', 'recorded']);
  });

  it('derives fingerprints from the stored key, not from the file', async () => {
    const real = key();
    const record = {
      node_id: 'gpu-01',
      public_key: real.toString('base64'),
      fingerprint: 'sha256:' + '0'.repeat(64),
      token_sha256: TOKEN_A,
      recorded_at: '2026-01-01T00:00:00.000Z',
    };
    await writeFile(
      path.join(dataDir, NODE_IDENTITY_FILE),
      JSON.stringify({ version: 1, identities: [record] }),
    );
    const store = createNodeIdentityStore({ dataDir });
    expect((await store.current('gpu-01', always))?.fingerprint).toBe(identityFingerprint(real));
  });

  it('fails with a typed error on a corrupt file and leaves it as it was', async () => {
    const file = path.join(dataDir, NODE_IDENTITY_FILE);
    await writeFile(file, '{"version":1,"identities":[{"node_id":1}]}');
    const store = createNodeIdentityStore({ dataDir });
    await expect(store.claim('gpu-01', key(), TOKEN_A, always)).rejects.toMatchObject({
      name: 'NodeStoreError',
      code: 'store_corrupt',
    });
    expect(await readFile(file, 'utf8')).toBe('{"version":1,"identities":[{"node_id":1}]}');
  });
});
