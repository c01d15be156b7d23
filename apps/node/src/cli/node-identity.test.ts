import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, sign, verify, createPublicKey } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { IDENTITY_KEY_FILE, loadOrCreateNodeIdentity } from './node-identity.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'iop-node-identity-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('node identity key', () => {
  it('makes an Ed25519 key 0600 on the first start and loads the same key afterwards', () => {
    const first = loadOrCreateNodeIdentity(dir);
    expect(first.created).toBe(true);
    expect(first.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(statSync(path.join(dir, IDENTITY_KEY_FILE)).mode & 0o777).toBe(0o600);
    const again = loadOrCreateNodeIdentity(dir);
    expect(again.created).toBe(false);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(again.warning).toBeUndefined();
    // The public key it reports is the one its private key signs for.
    const signature = sign(null, Buffer.from('x'), again.privateKey);
    const publicKey = createPublicKey({ key: again.publicKeySpki, format: 'der', type: 'spki' });
    expect(verify(null, Buffer.from('x'), publicKey, signature)).toBe(true);
  });

  it('warns when the key file is readable by others', () => {
    loadOrCreateNodeIdentity(dir);
    chmodSync(path.join(dir, IDENTITY_KEY_FILE), 0o644);
    expect(loadOrCreateNodeIdentity(dir).warning).toContain('chmod 600');
  });

  it('refuses a key file that is not a PEM key or not Ed25519, naming the file', () => {
    const file = path.join(dir, IDENTITY_KEY_FILE);
    writeFileSync(file, 'not a key', { mode: 0o600 });
    expect(() => loadOrCreateNodeIdentity(dir)).toThrow(/is not a PEM private key/);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    writeFileSync(file, ec.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    expect(() => loadOrCreateNodeIdentity(dir)).toThrow(/is a ec key, not Ed25519/);
  });
});
