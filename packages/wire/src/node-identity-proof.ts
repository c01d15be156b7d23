// What a node signs to prove it holds its identity key, and how the edge checks it. Both ends build the same
// bytes here, so the layout lives in one place (agent-contract/inner/edge-node-runtime-wire.md, RegisterProof).
//
// The signed message is "iop-node-identity-v1" 0x00 node_id 0x00 nonce channel_binding. The nonce is the edge's
// fresh RegisterChallenge, so a recorded proof cannot be replayed; the channel binding is TLS exported keying
// material of the very connection the proof travels on, so a proof a relay obtained on one TLS session (say, a
// fake edge the node was tricked into dialing) is worthless on another. On a plaintext link the binding is empty.
import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { fingerprintOfSpki } from './edge-fingerprint.js';
import type { FramedConnection } from './framed-connection.js';

/** RFC 5705 exporter label of the channel binding. */
export const NODE_IDENTITY_EXPORTER_LABEL = 'EXPORTER-iop-node-identity';
export const NODE_IDENTITY_BINDING_BYTES = 32;
/** Size of the edge's challenge nonce. */
export const NODE_IDENTITY_NONCE_BYTES = 32;
const CONTEXT = Buffer.from('iop-node-identity-v1\0', 'utf8');

/** The channel binding of `connection` (empty on a plaintext one). */
export function identityChannelBinding(connection: Pick<FramedConnection, 'exportKeyingMaterial'>): Buffer {
  return (
    connection.exportKeyingMaterial(NODE_IDENTITY_BINDING_BYTES, NODE_IDENTITY_EXPORTER_LABEL) ??
    Buffer.alloc(0)
  );
}

/** The bytes a RegisterProof signs. */
export function identityProofMessage(nodeId: string, nonce: Uint8Array, binding: Uint8Array): Buffer {
  return Buffer.concat([CONTEXT, Buffer.from(`${nodeId}\0`, 'utf8'), nonce, binding]);
}

/** Ed25519 signature of the proof message with the node's private key. */
export function signIdentityProof(
  privateKey: KeyObject,
  nodeId: string,
  nonce: Uint8Array,
  binding: Uint8Array,
): Buffer {
  return sign(null, identityProofMessage(nodeId, nonce, binding), privateKey);
}

/**
 * True when `signature` is a valid proof by the key `publicKeySpki` (DER SubjectPublicKeyInfo, Ed25519). Any
 * malformed key or signature is simply not a valid proof.
 */
export function verifyIdentityProof(
  publicKeySpki: Uint8Array,
  signature: Uint8Array,
  nodeId: string,
  nonce: Uint8Array,
  binding: Uint8Array,
): boolean {
  try {
    const key = createPublicKey({ key: Buffer.from(publicKeySpki), format: 'der', type: 'spki' });
    if (key.asymmetricKeyType !== 'ed25519') return false;
    return verify(null, identityProofMessage(nodeId, nonce, binding), key, Buffer.from(signature));
  } catch {
    return false;
  }
}

/** True when `spki` parses as an Ed25519 public key. */
export function isIdentityPublicKey(spki: Uint8Array): boolean {
  try {
    return (
      createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }).asymmetricKeyType === 'ed25519'
    );
  } catch {
    return false;
  }
}

/** `sha256:<hex>` of an identity key's SubjectPublicKeyInfo (the same form as the edge fingerprint). */
export function identityFingerprint(spki: Uint8Array): string {
  return fingerprintOfSpki(Buffer.from(spki));
}
