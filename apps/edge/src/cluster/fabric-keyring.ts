// The fabric key and its keyring (cluster.fabric_key_file). Every edge of a fabric holds the same file; a message
// on NATS counts only when one of its keys opens it (fabric-sealer.ts).
//
// The file holds one key per line: 32 random bytes in base64 (what `iop-edge cluster keygen` writes). Blank lines
// and lines starting with `#` are skipped. The first key is the primary: every message is sealed with it. The
// others are only accepted, which is how a key is rotated without stopping the fabric: add the new key as a
// second line on every edge, then move it first on every edge, then remove the old line (each step one edge at a
// time; at every moment each edge opens what any other edge sends).
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { typedError, type FaultTable } from '@iop/errors';

/** AES-256: a fabric key is 32 bytes. */
export const FABRIC_KEY_BYTES = 32;
/** Bytes of a key's id in every sealed message (which key of the ring opens it). */
export const KEY_ID_BYTES = 4;
/** Keys a ring may hold (a rotation needs two; a few more leave room for a slow rollout). */
export const MAX_KEYS = 8;

export type FabricKeyErrorCode =
  'fabric_key_missing' | 'fabric_key_invalid' | 'fabric_key_exists' | 'fabric_key_unreadable';

/** Always the operator's: a missing, unreadable or malformed key file. */
const FABRIC_KEY_FAULT: FaultTable<FabricKeyErrorCode> = {
  fabric_key_missing: 'caller',
  fabric_key_invalid: 'caller',
  fabric_key_exists: 'caller',
  fabric_key_unreadable: 'caller',
};

/** Why a fabric key file cannot be used: the operator's to fix (the message names the file and the line). */
export class FabricKeyError extends typedError('FabricKeyError', FABRIC_KEY_FAULT) {}

export interface FabricKey {
  /** The id sealed messages carry (the first 4 bytes of a SHA-256 of the key). */
  readonly id: Uint8Array;
  readonly secret: Buffer;
}

export interface FabricKeyring {
  /** The key every message is sealed with. */
  readonly primary: FabricKey;
  /** Every accepted key, the primary first. */
  readonly keys: readonly FabricKey[];
  /** The accepted key with this id, if any. */
  find(id: Uint8Array): FabricKey | undefined;
}

function keyId(secret: Buffer): Uint8Array {
  return createHash('sha256').update('iop fabric key id\0').update(secret).digest().subarray(0, KEY_ID_BYTES);
}

function toKey(secret: Buffer): FabricKey {
  const id = keyId(secret);
  return { id, secret };
}

/** A new random fabric key, as the one line of a key file. */
export function generateFabricKey(): string {
  return randomBytes(FABRIC_KEY_BYTES).toString('base64');
}

/** A keyring from the raw 32-byte keys (primary first). */
export function keyringOf(secrets: readonly Buffer[]): FabricKeyring {
  if (secrets.length === 0) throw new FabricKeyError('fabric_key_missing', 'a fabric keyring needs a key');
  const keys = secrets.map((secret) => {
    if (secret.length !== FABRIC_KEY_BYTES) {
      throw new FabricKeyError('fabric_key_invalid', `a fabric key is ${FABRIC_KEY_BYTES} bytes`);
    }
    return toKey(Buffer.from(secret));
  });
  return {
    primary: keys[0],
    keys,
    // A ring holds a few keys: compared byte by byte (no hex string per message).
    find: (id) => {
      if (id.length !== KEY_ID_BYTES) return undefined;
      return keys.find((key) => key.id.every((byte, index) => byte === id[index]));
    },
  };
}

/** Parses a key file's text (`source` names it in errors). */
export function parseFabricKeyring(text: string, source: string): FabricKeyring {
  const secrets: Buffer[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const secret = /^[A-Za-z0-9+/]+={0,2}$/.test(line) ? Buffer.from(line, 'base64') : Buffer.alloc(0);
    if (secret.length !== FABRIC_KEY_BYTES) {
      throw new FabricKeyError(
        'fabric_key_invalid',
        `${source}:${index + 1}: not a fabric key (${FABRIC_KEY_BYTES} bytes in base64, as \`iop-edge cluster keygen\` writes)`,
      );
    }
    if (secrets.some((known) => known.equals(secret))) continue;
    secrets.push(secret);
  }
  if (secrets.length === 0) {
    throw new FabricKeyError('fabric_key_missing', `${source}: holds no fabric key`);
  }
  if (secrets.length > MAX_KEYS) {
    throw new FabricKeyError('fabric_key_invalid', `${source}: holds more than ${MAX_KEYS} keys`);
  }
  return keyringOf(secrets);
}

/** Reads and parses cluster.fabric_key_file. */
export function readFabricKeyring(path: string): FabricKeyring {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (error) {
    throw new FabricKeyError('fabric_key_unreadable', `cannot read the fabric key file ${path}`, {
      cause: error,
    });
  }
  return parseFabricKeyring(text, path);
}

/** Whether group or others may read the file (the key must stay the edges' own; warned at start). */
export function keyFileIsShared(path: string): boolean {
  if (process.platform === 'win32') return false;
  return (fs.statSync(path).mode & 0o077) !== 0;
}

/** Writes a new key file (mode 0600); never overwrites an existing file. */
export function writeFabricKeyFile(path: string): void {
  let fd: number;
  try {
    fd = fs.openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new FabricKeyError('fabric_key_exists', `${path} exists; a fabric key is never overwritten`, {
        cause: error,
      });
    }
    throw new FabricKeyError('fabric_key_unreadable', `cannot create ${path}`, { cause: error });
  }
  try {
    fs.writeSync(fd, `${generateFabricKey()}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
