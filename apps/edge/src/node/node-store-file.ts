// The node store's file, `<edge.data_dir>/nodes.json` ({ version: 1, nodes: NodeStoreRecord[] }, mode 0600):
// reading it again only when its stamp (inode, size, mtime) moved, and writing it atomically (temp file in the
// same directory, fsync, rename) under the owner it must keep. Who may connect is decided in node-store.ts.
import { promises as fs, statSync } from 'node:fs';
import { NodeStoreError } from './errors.js';
import { isSha256Hex } from './token-digest.js';

export interface NodeStoreRecord {
  node_id: string;
  token_sha256: string;
  created_at: string;
  rotated_at: string;
}

export interface NodeStoreFileOptions {
  filePath: string;
  dataDir: string;
  randomBytes: (size: number) => Buffer;
  /** Effective uid of this process; undefined on Windows. */
  uid: () => number | undefined;
  chown: (file: string, uid: number, gid: number) => Promise<void>;
}

export class NodeStoreFile {
  private cache: { stamp: string; records: Map<string, NodeStoreRecord> } | undefined;
  private reading: { stamp: string; records: Promise<Map<string, NodeStoreRecord>> } | undefined;

  constructor(private readonly options: NodeStoreFileOptions) {}

  /** The stamp of the records last read ('missing' without a file, or before the first read). */
  get stamp(): string {
    return this.cache?.stamp ?? 'missing';
  }

  /** Drops what was read, so the next `load` reads the file (before a write: another process may have written). */
  forget(): void {
    this.cache = undefined;
  }

  /**
   * The records as the file holds them now. The stamp check is a synchronous stat: a few microseconds for the
   * edge's own data dir (where it also writes its usage database synchronously), against ~50 µs of main-thread
   * CPU for each `fs.promises.stat` — which at 10,000 registering nodes was the largest single cost of a
   * registration. The file is read and parsed again only when its stamp moved; registrations that arrive while
   * that read is in flight share it.
   */
  load(): Promise<Map<string, NodeStoreRecord>> {
    const { filePath } = this.options;
    let stamp: string;
    try {
      const stat = statSync(filePath);
      stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (error) {
      if (isNotFound(error)) {
        this.cache = { stamp: 'missing', records: new Map() };
        return Promise.resolve(this.cache.records);
      }
      return Promise.reject(
        new NodeStoreError('store_unreadable', `cannot read node store ${filePath}`, { cause: error }),
      );
    }
    if (this.cache?.stamp === stamp) return Promise.resolve(this.cache.records);
    if (this.reading?.stamp === stamp) return this.reading.records;
    const records = this.readRecords(stamp).finally(() => {
      if (this.reading?.records === records) this.reading = undefined;
    });
    this.reading = { stamp, records };
    return records;
  }

  /** Replaces the file with `records`, atomically, keeping its owner (ownerToKeep). */
  async write(records: Map<string, NodeStoreRecord>): Promise<void> {
    const { filePath, dataDir, randomBytes, chown } = this.options;
    await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
    const owner = await this.ownerToKeep();
    const body = `${JSON.stringify({ version: 1, nodes: [...records.values()].sort(byNodeId) }, null, 2)}\n`;
    const temp = `${filePath}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
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

  /** Reads and parses the file whose stamp was `stamp` (stat again when it vanished meanwhile). */
  private async readRecords(stamp: string): Promise<Map<string, NodeStoreRecord>> {
    const { filePath } = this.options;
    let text: string;
    try {
      text = await fs.readFile(filePath, 'utf8');
    } catch (error) {
      if (isNotFound(error)) return this.load();
      throw new NodeStoreError('store_unreadable', `cannot read node store ${filePath}`, { cause: error });
    }
    this.cache = { stamp, records: parseStore(text, filePath) };
    return this.cache.records;
  }

  /**
   * The owner the file must keep: the current file's (or, for a new file, the data dir's) when that is another
   * user — `sudo iop-edge node register` on a host prepared by `setup` must leave nodes.json readable by the
   * service user. Only root can give a file away; anyone else gets the `sudo -u` hint instead of a file the
   * service cannot read.
   */
  private async ownerToKeep(): Promise<{ uid: number; gid: number } | undefined> {
    const { filePath, dataDir } = this.options;
    const stat = await fs.stat(filePath).catch(async (error: unknown) => {
      if (!isNotFound(error)) throw error;
      return fs.stat(dataDir);
    });
    const current = this.options.uid();
    if (stat.uid === current || current === undefined) return undefined;
    if (current !== 0) {
      throw new NodeStoreError(
        'store_unwritable',
        `node store ${filePath} belongs to uid ${stat.uid}: run this as that user, e.g. sudo -u '#${stat.uid}' iop-edge node register ...`,
      );
    }
    return { uid: stat.uid, gid: stat.gid };
  }
}

/** Records in node id order (the file's order and `list`'s). */
export function byNodeId(left: NodeStoreRecord, right: NodeStoreRecord): number {
  return left.node_id.localeCompare(right.node_id);
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
      !isSha256Hex(entry['token_sha256']) ||
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNotFound(error: unknown): boolean {
  return isObject(error) && error['code'] === 'ENOENT';
}
