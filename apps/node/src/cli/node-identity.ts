// The node's identity key: an Ed25519 key pair made on the first start and kept in the data dir as
// `identity.key` (PKCS#8 PEM, mode 0600, never sent anywhere). The edge records the public key on the node's first
// registration with its token and from then on asks for a signature by it (a challenge inside TLS), so a copy of
// the token alone cannot register as this node. A re-install (a new data dir, so a new key) needs a new token:
// `iop-edge node register <id>` resets the identity the edge holds.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { identityFingerprint } from '@iop/wire';

export const IDENTITY_KEY_FILE = 'identity.key';

export interface NodeIdentity {
  privateKey: KeyObject;
  /** DER SubjectPublicKeyInfo of the public key (what the register request carries). */
  publicKeySpki: Buffer;
  /** `sha256:<hex>` of the public key, as `iop-edge nodes list` shows it. */
  fingerprint: string;
  file: string;
  /** True when this start made the key. */
  created: boolean;
  /** Set when the key file is readable by group or others. */
  warning?: string;
}

export class NodeIdentityError extends Error {
  override readonly name = 'NodeIdentityError';
  readonly code = 'identity_key_invalid';
}

/** Reads `<dataDir>/identity.key`, or makes it (0600, created exclusively so two starts cannot both write one). */
export function loadOrCreateNodeIdentity(dataDir: string): NodeIdentity {
  const file = path.join(dataDir, IDENTITY_KEY_FILE);
  let created = false;
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new NodeIdentityError(`cannot read the identity key ${file}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    try {
      fs.writeFileSync(file, pem, { flag: 'wx', mode: 0o600 });
      created = true;
    } catch (writeError) {
      if ((writeError as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new NodeIdentityError(
          `cannot write the identity key ${file}: ${(writeError as Error).message}`,
          { cause: writeError },
        );
      }
      pem = fs.readFileSync(file, 'utf8');
    }
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new NodeIdentityError(
      `the identity key ${file} is not a PEM private key (remove it to make a new one, then re-register the node with 'iop-edge node register')`,
      { cause: error },
    );
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new NodeIdentityError(
      `the identity key ${file} is a ${privateKey.asymmetricKeyType ?? 'unknown'} key, not Ed25519`,
    );
  }
  const publicKeySpki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const mode = fs.statSync(file).mode;
  const warning =
    process.platform !== 'win32' && (mode & 0o077) !== 0
      ? `identity key ${file} is readable by other users (chmod 600 it)`
      : undefined;
  return {
    privateKey,
    publicKeySpki,
    fingerprint: identityFingerprint(publicKeySpki),
    file,
    created,
    ...(warning ? { warning } : {}),
  };
}
