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
import { createHash, randomBytes as defaultRandomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fs, statSync } from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../clock.js';
import { NodeStoreError } from './errors.js';

export interface NodeStoreRecord {
  node_id: string;
  token_sha256: string;
  created_at: string;
  rotated_at: string;
}

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
const SHA256_HEX = /^[0-9a-f]{64}$/i;

export function isValidNodeId(nodeId: string): boolean {
  return NODE_ID_PATTERN.test(nodeId);
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex SHA-256 digests (false for malformed input, still without early exit). */
export function digestsEqual(leftHex: string, rightHex: string): boolean {
  if (!SHA256_HEX.test(leftHex) || !SHA256_HEX.test(rightHex)) return false;
  return timingSafeEqual(Buffer.from(leftHex, 'hex'), Buffer.from(rightHex, 'hex'));
}

export function createNodeStore(options: NodeStoreOptions): NodeStore {
  const filePath = path.join(options.dataDir, NODE_STORE_FILE);
  const clock = options.clock ?? systemClock;
  const random = options.randomBytes ?? defaultRandomBytes;
  const configNodes = new Map((options.configNodes ?? []).map((node) => [node.id, node]));
  let cache: { stamp: string; records: Map<string, NodeStoreRecord> } | undefined;
  let reading: { stamp: string; records: Promise<Map<string, NodeStoreRecord>> } | undefined;
  // Serializes this process's writes; other processes are covered by re-reading right before each write.
  let writeChain: Promise<unknown> = Promise.resolve();
  let lastReported: { message: string; at: number } | undefined;
  const uid = options.uid ?? (() => process.getuid?.());
  const chown =
    options.chown ?? ((file: string, owner: number, group: number) => fs.chown(file, owner, group));

  /**
   * The records as the file holds them now. The stamp check is a synchronous stat: a few microseconds for the
   * edge's own data dir (where it also writes its usage database synchronously), against ~50 µs of main-thread
   * CPU for each `fs.promises.stat` — which at 10,000 registering nodes was the largest single cost of a
   * registration. The file is read and parsed again only when its stamp moved; registrations that arrive while
   * that read is in flight share it.
   */
  function load(): Promise<Map<string, NodeStoreRecord>> {
    let stamp: string;
    try {
      const stat = statSync(filePath);
      stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (error) {
      if (isNotFound(error)) {
        cache = { stamp: 'missing', records: new Map() };
        return Promise.resolve(cache.records);
      }
      return Promise.reject(
        new NodeStoreError('store_unreadable', `cannot read node store ${filePath}`, { cause: error }),
      );
    }
    if (cache?.stamp === stamp) return Promise.resolve(cache.records);
    if (reading?.stamp === stamp) return reading.records;
    const records = readRecords(stamp).finally(() => {
      if (reading?.records === records) reading = undefined;
    });
    reading = { stamp, records };
    return records;
  }

  /** Reads and parses the file whose stamp was `stamp` (stat again when it vanished meanwhile). */
  async function readRecords(stamp: string): Promise<Map<string, NodeStoreRecord>> {
    let text: string;
    try {
      text = await fs.readFile(filePath, 'utf8');
    } catch (error) {
      if (isNotFound(error)) return load();
      throw new NodeStoreError('store_unreadable', `cannot read node store ${filePath}`, { cause: error });
    }
    cache = { stamp, records: parseStore(text, filePath) };
    return cache.records;
  }

  /**
   * The owner the file must keep: the current file's (or, for a new file, the data dir's) when that is another
   * user — `sudo iop-edge node register` on a host prepared by `setup` must leave nodes.json readable by the
   * service user. Only root can give a file away; anyone else gets the `sudo -u` hint instead of a file the
   * service cannot read.
   */
  async function ownerToKeep(): Promise<{ uid: number; gid: number } | undefined> {
    const stat = await fs.stat(filePath).catch(async (error: unknown) => {
      if (!isNotFound(error)) throw error;
      return fs.stat(options.dataDir);
    });
    const current = uid();
    if (stat.uid === current || current === undefined) return undefined;
    if (current !== 0) {
      throw new NodeStoreError(
        'store_unwritable',
        `node store ${filePath} belongs to uid ${stat.uid}: run this as that user, e.g. sudo -u '#${stat.uid}' iop-edge node register ...`,
      );
    }
    return { uid: stat.uid, gid: stat.gid };
  }

  async function write(records: Map<string, NodeStoreRecord>): Promise<void> {
    await fs.mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    const owner = await ownerToKeep();
    const body = `${JSON.stringify({ version: 1, nodes: [...records.values()].sort(byNodeId) }, null, 2)}\n`;
    const temp = `${filePath}.${process.pid}.${random(6).toString('hex')}.tmp`;
    const handle = await fs.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(body, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      if (owner) await chown(temp, owner.uid, owner.gid);
      await fs.rename(temp, filePath);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw new NodeStoreError('store_unwritable', `cannot write node store ${filePath}`, { cause: error });
    }
    // rename keeps the temp file's 0600 mode; chmod covers a pre-existing file created by hand.
    await fs.chmod(filePath, 0o600);
  }

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
        cache = undefined; // always re-read before a write: another process may have written meanwhile
        const records = new Map(await load());
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
        await write(records);
        cache = undefined;
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
        cache = undefined;
        const records = new Map(await load());
        if (!records.delete(nodeId)) return false;
        await write(records);
        cache = undefined;
        return true;
      });
      writeChain = task.catch(() => undefined);
      return task;
    },
    async knows(nodeId) {
      return configNodes.has(nodeId) || (await load()).has(nodeId);
    },
    async list() {
      return [...(await load()).values()].sort(byNodeId);
    },
    async revision() {
      await load();
      return cache?.stamp ?? 'missing';
    },
  };

  async function storedRecords(): Promise<Map<string, NodeStoreRecord>> {
    try {
      return await load();
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

function parseStore(text: string, filePath: string): Map<string, NodeStoreRecord> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new NodeStoreError('store_corrupt', `node store ${filePath} is not valid JSON`, { cause: error });
  }
  if (!isObject(parsed) || parsed['version'] !== 1 || !Array.isArray(parsed['nodes'])) {
    throw new NodeStoreError('store_corrupt', `node store ${filePath} must be {"version":1,"nodes":[...]}`);
  }
  const records = new Map<string, NodeStoreRecord>();
  for (const [index, entry] of (parsed['nodes'] as unknown[]).entries()) {
    if (
      !isObject(entry) ||
      typeof entry['node_id'] !== 'string' ||
      typeof entry['token_sha256'] !== 'string' ||
      !SHA256_HEX.test(entry['token_sha256']) ||
      typeof entry['created_at'] !== 'string' ||
      typeof entry['rotated_at'] !== 'string'
    ) {
      throw new NodeStoreError('store_corrupt', `node store ${filePath}: nodes[${index}] is malformed`);
    }
    records.set(entry['node_id'], {
      node_id: entry['node_id'],
      token_sha256: entry['token_sha256'].toLowerCase(),
      created_at: entry['created_at'],
      rotated_at: entry['rotated_at'],
    });
  }
  return records;
}

function byNodeId(left: NodeStoreRecord, right: NodeStoreRecord): number {
  return left.node_id.localeCompare(right.node_id);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNotFound(error: unknown): boolean {
  return isObject(error) && error['code'] === 'ENOENT';
}
