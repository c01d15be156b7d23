// The identity key the edge holds for each node: the Ed25519 public key a node proved on its first registration
// with its current token, so that later registrations must prove the same key (node-connection.ts) and a copy of
// the token alone cannot become the node.
//
// Persisted as `<edge.data_dir>/node-identities.json` ({ version: 1, identities: [...] }, mode 0600), written
// only by the serving edge (atomic: temp file, fsync, rename) and read once at its start. Each record keeps the
// SHA-256 of the token it was recorded with. A record counts only while that token is still accepted for the node
// (`isCurrent`, checked against the node store): `iop-edge node register` (a rotation), a revocation or a new
// `nodes[].token` therefore resets the identity without this file being touched by another process, and the next
// registration with the new token records the key it proves.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { identityFingerprint } from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import { NodeStoreError } from './errors.js';

export interface NodeIdentityRecord {
  node_id: string;
  /** DER SubjectPublicKeyInfo, base64. */
  public_key: string;
  /** `sha256:<hex>` of the key. */
  fingerprint: string;
  /** SHA-256 (hex) of the token the node registered with when the key was recorded. */
  token_sha256: string;
  recorded_at: string;
}

/** Whether a record still binds its node (its token is still accepted). */
export type IdentityIsCurrent = (record: NodeIdentityRecord) => Promise<boolean>;

export type IdentityClaim =
  | { outcome: 'recorded'; record: NodeIdentityRecord }
  | { outcome: 'match'; record: NodeIdentityRecord }
  | { outcome: 'mismatch'; record: NodeIdentityRecord };

export interface NodeIdentityStore {
  readonly filePath: string;
  /** The node's record when it is current, else undefined. */
  current(nodeId: string, isCurrent: IdentityIsCurrent): Promise<NodeIdentityRecord | undefined>;
  /**
   * Binds `publicKey` to the node unless a current record names another key. Serialized, so two first
   * registrations racing for one node cannot both record.
   */
  claim(
    nodeId: string,
    publicKey: Uint8Array,
    tokenSha256: string,
    isCurrent: IdentityIsCurrent,
  ): Promise<IdentityClaim>;
  /** Every record (current or not), sorted by node id. */
  list(): Promise<NodeIdentityRecord[]>;
}

export interface NodeIdentityStoreOptions {
  dataDir: string;
  clock?: Clock;
}

export const NODE_IDENTITY_FILE = 'node-identities.json';

export function createNodeIdentityStore(options: NodeIdentityStoreOptions): NodeIdentityStore {
  const filePath = path.join(options.dataDir, NODE_IDENTITY_FILE);
  const clock = options.clock ?? systemClock;
  let records: Promise<Map<string, NodeIdentityRecord>> | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  const load = (): Promise<Map<string, NodeIdentityRecord>> => {
    records ??= readRecords(filePath).catch((error: unknown) => {
      records = undefined; // a later call tries again
      throw error;
    });
    return records;
  };

  const write = async (next: Map<string, NodeIdentityRecord>): Promise<void> => {
    await fs.mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    const body = `${JSON.stringify({ version: 1, identities: [...next.values()].sort(byNodeId) }, null, 2)}\n`;
    const temp = `${filePath}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await fs.open(temp, 'wx', 0o600);
      try {
        await handle.writeFile(body, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(temp, filePath);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw new NodeStoreError('store_unwritable', `cannot write node identities ${filePath}`, {
        cause: error,
      });
    }
  };

  return {
    filePath,
    async current(nodeId, isCurrent) {
      const record = (await load()).get(nodeId);
      return record && (await isCurrent(record)) ? record : undefined;
    },
    claim(nodeId, publicKey, tokenSha256, isCurrent) {
      const task = chain.then(async (): Promise<IdentityClaim> => {
        const known = await load();
        const fingerprint = identityFingerprint(publicKey);
        const existing = known.get(nodeId);
        if (existing && (await isCurrent(existing))) {
          return { outcome: existing.fingerprint === fingerprint ? 'match' : 'mismatch', record: existing };
        }
        const record: NodeIdentityRecord = {
          node_id: nodeId,
          public_key: Buffer.from(publicKey).toString('base64'),
          fingerprint,
          token_sha256: tokenSha256.toLowerCase(),
          recorded_at: new Date(clock.now()).toISOString(),
        };
        const next = new Map(known);
        next.set(nodeId, record);
        await write(next);
        records = Promise.resolve(next);
        return { outcome: 'recorded', record };
      });
      chain = task.catch(() => undefined);
      return task;
    },
    async list() {
      return [...(await load()).values()].sort(byNodeId);
    },
  };
}

async function readRecords(filePath: string): Promise<Map<string, NodeIdentityRecord>> {
  let text: string;
  try {
    text = await fs.readFile(filePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new NodeStoreError('store_unreadable', `cannot read node identities ${filePath}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new NodeStoreError('store_corrupt', `node identities ${filePath} is not valid JSON`, {
      cause: error,
    });
  }
  if (!isObject(parsed) || parsed['version'] !== 1 || !Array.isArray(parsed['identities'])) {
    throw new NodeStoreError(
      'store_corrupt',
      `node identities ${filePath} must be {"version":1,"identities":[...]}`,
    );
  }
  const result = new Map<string, NodeIdentityRecord>();
  for (const [index, entry] of (parsed['identities'] as unknown[]).entries()) {
    const fields = ['node_id', 'public_key', 'fingerprint', 'token_sha256', 'recorded_at'] as const;
    if (!isObject(entry) || fields.some((field) => typeof entry[field] !== 'string')) {
      throw new NodeStoreError(
        'store_corrupt',
        `node identities ${filePath}: identities[${index}] is malformed`,
      );
    }
    const record = entry as unknown as NodeIdentityRecord;
    // The fingerprint is derived, never trusted from the file: a hand-edited entry cannot claim another key.
    const fingerprint = identityFingerprint(Buffer.from(record.public_key, 'base64'));
    result.set(record.node_id, { ...record, fingerprint });
  }
  return result;
}

function byNodeId(left: NodeIdentityRecord, right: NodeIdentityRecord): number {
  return left.node_id.localeCompare(right.node_id);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
