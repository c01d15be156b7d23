import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import {
  identityFingerprint,
  isIdentityPublicKey,
  signIdentityProof,
  verifyIdentityProof,
} from './node-identity-proof.js';

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const spki = publicKey.export({ type: 'spki', format: 'der' });
const nonce = Buffer.alloc(32, 1);
const binding = Buffer.alloc(32, 2);

describe('node identity proof', () => {
  it('verifies a proof made with the matching private key', () => {
    const signature = signIdentityProof(privateKey, 'gpu-01', nonce, binding);
    expect(verifyIdentityProof(spki, signature, 'gpu-01', nonce, binding)).toBe(true);
  });

  it('rejects a proof for another nonce, channel binding or node id', () => {
    const signature = signIdentityProof(privateKey, 'gpu-01', nonce, binding);
    expect(verifyIdentityProof(spki, signature, 'gpu-01', Buffer.alloc(32, 9), binding)).toBe(false);
    expect(verifyIdentityProof(spki, signature, 'gpu-01', nonce, Buffer.alloc(32, 9))).toBe(false);
    expect(verifyIdentityProof(spki, signature, 'gpu-01', nonce, Buffer.alloc(0))).toBe(false);
    expect(verifyIdentityProof(spki, signature, 'gpu-02', nonce, binding)).toBe(false);
  });

  it('rejects a proof by another key, a malformed key or signature, and a key that is not Ed25519', () => {
    const other = generateKeyPairSync('ed25519');
    const signature = signIdentityProof(other.privateKey, 'gpu-01', nonce, binding);
    expect(verifyIdentityProof(spki, signature, 'gpu-01', nonce, binding)).toBe(false);
    expect(verifyIdentityProof(Buffer.from('junk'), signature, 'gpu-01', nonce, binding)).toBe(false);
    expect(verifyIdentityProof(spki, Buffer.alloc(3), 'gpu-01', nonce, binding)).toBe(false);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const ecSpki = ec.publicKey.export({ type: 'spki', format: 'der' });
    expect(isIdentityPublicKey(ecSpki)).toBe(false);
    expect(isIdentityPublicKey(spki)).toBe(true);
    expect(isIdentityPublicKey(Buffer.alloc(0))).toBe(false);
  });

  it('names a key by sha256: and the hex digest of its SubjectPublicKeyInfo', () => {
    expect(identityFingerprint(spki)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(identityFingerprint(spki)).not.toBe(
      identityFingerprint(generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' })),
    );
  });
});
