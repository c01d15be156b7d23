// The pre-registered node store: which node ids may connect and the SHA-256 of each one's token.
//
// Persisted as `<edge.data_dir>/nodes.json` ({ version: 1, nodes: NodeStoreRecord[] }, mode 0600). Writes are
// atomic (temp file in the same directory, fsync, rename) so a crash never leaves a half-written file and a
// running edge never reads one. `iop-edge node register` writes the file from another process; the running edge
// notices through the file's mtime/size/inode and re-reads it before verifying, so a freshly registered node can
// connect without an edge restart.
//
// Tokens are never stored or logged: only their SHA-256. A node may also be declared in config with a dev token
// (`nodes[].token`) or a digest (`nodes[].token_sha256`); any of the known secrets is accepted. Comparisons use
// crypto.timingSafeEqual on fixed-length digests so timing reveals nothing about the token. When the file cannot
// be read (a wrong owner after `sudo iop-edge node register`, say), verification reports it through
// `onUnreadable` and still accepts the tokens configured in edge.yaml.
//
// `revoke` removes a node's stored token; together with rotation it is enforced on live connections by the token
// revocation check (token-revocation.ts), which re-verifies each connected node's token digest.
//
// The file itself (cached reads, atomic writes, its owner) is node-store-file.ts; digests are token-digest.ts.
import { randomBytes as defaultRandomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../clock.js';
import { NodeStoreError } from './errors.js';
import { byNodeId, NodeStoreFile, type NodeStoreRecord } from './node-store-file.js';
import { digestsEqual, sha256Hex } from './token-digest.js';

export type { NodeStoreRecord };
/** A token's digest as the store keeps it (token-digest.ts; the node links import it from here). */
export { sha256Hex };

/** The token-related part of a config node (`nodes[]`); structural so the store does not depend on the loader. */
export interface ConfiguredNodeSecret {
  id: string;
  token?: string | undefined;
  token_sha256?: string | undefined;
}

export type VerifyResult =
  | { ok: true; source: 'config-token' | 'config-digest' | 'store' }
  | { ok: false; reason: 'unknown_node' | 'bad_token' };

export interface RegisterResult {
  /** The new token. Shown once; only its digest is kept. */
  token: string;
  record: NodeStoreRecord;
  /** True when the node already had a stored token, which is now replaced. */
  rotated: boolean;
}

export interface NodeStore {
  readonly filePath: string;
  /** Creates the node's entry or rotates its token. */
  register(nodeId: string): Promise<RegisterResult>;
  verify(nodeId: string, token: string): Promise<VerifyResult>;
  /** `verify` for a token known only by its SHA-256 (hex): how live connections are re-checked. */
  verifyDigest(nodeId: string, tokenSha256: string): Promise<VerifyResult>;
  /** Removes the node's stored token; false when it had none. Config-declared secrets are not touched. */
  revoke(nodeId: string): Promise<boolean>;
  /** True when the id is in config or in the store. */
  knows(nodeId: string): Promise<boolean>;
  /** Stored records (config-only nodes excluded), sorted by node id. */
  list(): Promise<NodeStoreRecord[]>;
  /** Changes whenever the file does (inode, size, mtime; 'missing' without one); throws when unreadable. */
  revision(): Promise<string>;
}

export interface NodeStoreOptions {
  dataDir: string;
  configNodes?: readonly ConfiguredNodeSecret[];
  clock?: Clock;
  randomBytes?: (size: number) => Buffer;
  /**
   * The store file exists but cannot be read or parsed; verification then uses the config's secrets only.
   * Called again only when the problem changes or a minute has passed (verification runs often).
   */
  onUnreadable?: (error: NodeStoreError) => void;
  /** Effective uid of this process (injected for tests); undefined on Windows. */
  uid?: () => number | undefined;
  /** Injected for tests; default fs.promises.chown. */
  chown?: (file: string, uid: number, gid: number) => Promise<void>;
}

export const NODE_STORE_FILE = 'nodes.json';
const NODE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isValidNodeId(nodeId: string): boolean {
  return NODE_ID_PATTERN.test(nodeId);
}

export function createNodeStore(options: NodeStoreOptions): NodeStore {
  const filePath = path.join(options.dataDir, NODE_STORE_FILE);
  const clock = options.clock ?? systemClock;
  const random = options.randomBytes ?? defaultRandomBytes;
  const configNodes = new Map((options.configNodes ?? []).map((node) => [node.id, node]));
  const file = new NodeStoreFile({
    filePath,
    dataDir: options.dataDir,
    randomBytes: random,
    uid: options.uid ?? (() => process.getuid?.()),
    chown:
      options.chown ?? ((target: string, owner: number, group: number) => fs.chown(target, owner, group)),
  });
  // Serializes this process's writes; other processes are covered by re-reading right before each write.
  let writeChain: Promise<unknown> = Promise.resolve();
  let lastReported: { message: string; at: number } | undefined;

  return {
    filePath,
    register(nodeId) {
      const task = writeChain.then(async (): Promise<RegisterResult> => {
        if (!isValidNodeId(nodeId)) {
          throw new NodeStoreError(
            'invalid_node_id',
            `invalid node id '${nodeId}': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
          );
        }
        file.forget(); // always re-read before a write: another process may have written meanwhile
        const records = new Map(await file.load());
        const token = `iop_${random(32).toString('base64url')}`;
        const now = new Date(clock.now()).toISOString();
        const previous = records.get(nodeId);
        const record: NodeStoreRecord = {
          node_id: nodeId,
          token_sha256: sha256Hex(token),
          created_at: previous?.created_at ?? now,
          rotated_at: now,
        };
        records.set(nodeId, record);
        await file.write(records);
        file.forget();
        return { token, record, rotated: previous !== undefined };
      });
      writeChain = task.catch(() => undefined);
      return task;
    },
    verify(nodeId, token) {
      return verifyDigest(nodeId, sha256Hex(token));
    },
    verifyDigest(nodeId, tokenSha256) {
      return verifyDigest(nodeId, tokenSha256);
    },
    revoke(nodeId) {
      const task = writeChain.then(async (): Promise<boolean> => {
        file.forget();
        const records = new Map(await file.load());
        if (!records.delete(nodeId)) return false;
        await file.write(records);
        file.forget();
        return true;
      });
      writeChain = task.catch(() => undefined);
      return task;
    },
    async knows(nodeId) {
      return configNodes.has(nodeId) || (await file.load()).has(nodeId);
    },
    async list() {
      return [...(await file.load()).values()].sort(byNodeId);
    },
    async revision() {
      await file.load();
      return file.stamp;
    },
  };

  async function storedRecords(): Promise<Map<string, NodeStoreRecord>> {
    try {
      return await file.load();
    } catch (error) {
      if (!(error instanceof NodeStoreError) || options.onUnreadable === undefined) throw error;
      const now = clock.now();
      if (lastReported?.message !== error.message || now - lastReported.at >= 60_000) {
        lastReported = { message: error.message, at: now };
        options.onUnreadable(error);
      }
      return new Map();
    }
  }

  async function verifyDigest(nodeId: string, presentedDigest: string): Promise<VerifyResult> {
    const configured = configNodes.get(nodeId);
    const stored = (await storedRecords()).get(nodeId);
    if (!configured && !stored) return { ok: false, reason: 'unknown_node' };
    const presented = presentedDigest.toLowerCase();
    // Check every known secret (no early exit) so the time taken does not reveal which one matched.
    const configTokenOk =
      configured?.token !== undefined &&
      configured.token !== '' &&
      digestsEqual(sha256Hex(configured.token), presented);
    const configDigestOk =
      configured?.token_sha256 !== undefined &&
      digestsEqual(configured.token_sha256.toLowerCase(), presented);
    const storeOk = stored !== undefined && digestsEqual(stored.token_sha256, presented);
    if (configTokenOk) return { ok: true, source: 'config-token' };
    if (configDigestOk) return { ok: true, source: 'config-digest' };
    if (storeOk) return { ok: true, source: 'store' };
    return { ok: false, reason: 'bad_token' };
  }
}
