// One behaviour for both response stores: the SQLite store (over an in-memory database and over a file reopened
// by a second store) and the in-memory one keep the same TTL, per-key cap and owner rules.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import { MemoryResponseStore } from './memory-response-store.js';
import { responseStoreBounds, type ResponseStore, type StoredResponse } from './response-store.js';
import { RESPONSE_DATABASE_FILE, SqliteResponseStore } from './sqlite-response-store.js';

const HOUR = 3_600_000;
const bounds = { ttlMs: 24 * HOUR, maxPerKey: 3 };

const record = (owner: string, id: string, createdAt: number, previous?: string): StoredResponse => ({
  id,
  owner,
  previousResponseId: previous,
  inputItems: [
    { id: `msg_in_${id}`, type: 'message', role: 'user', content: [{ type: 'input_text', text: id }] },
  ],
  response: { id, object: 'response', status: 'completed', output: [{ id: `msg_${id}`, type: 'message' }] },
  createdAt,
});

const makers: [string, (clock: ManualClock) => ResponseStore][] = [
  ['memory', (clock) => new MemoryResponseStore({ ...bounds, clock })],
  [
    'sqlite',
    (clock) => SqliteResponseStore.over(new Database(':memory:'), { ...bounds, clock, logger: silentLogger }),
  ],
];

describe.each(makers)('%s response store', (_name, make) => {
  it('returns a saved record to its owner only', async () => {
    const clock = new ManualClock();
    const store = make(clock);
    store.save(record('team-a', 'resp_1', clock.now(), 'resp_0'));
    expect(store.get('team-a', 'resp_1')).toEqual(record('team-a', 'resp_1', clock.now(), 'resp_0'));
    expect(store.get('team-b', 'resp_1')).toBeUndefined();
    expect(store.get('team-a', 'resp_2')).toBeUndefined();
    await store.close();
  });

  it('forgets a record once its TTL has passed', async () => {
    const clock = new ManualClock();
    const store = make(clock);
    store.save(record('k', 'resp_old', clock.now()));
    clock.advance(24 * HOUR - 1);
    expect(store.get('k', 'resp_old')).toBeDefined();
    clock.advance(1);
    expect(store.get('k', 'resp_old')).toBeUndefined();
    // A later save removes it for good: it does not come back if the TTL were longer.
    store.save(record('k', 'resp_new', clock.now()));
    expect(store.get('k', 'resp_new')).toBeDefined();
    await store.close();
  });

  it('keeps at most maxPerKey records per owner, evicting the oldest first', async () => {
    const clock = new ManualClock();
    const store = make(clock);
    for (const id of ['r1', 'r2', 'r3', 'r4']) store.save(record('a', id, clock.now()));
    store.save(record('b', 'r5', clock.now()));
    expect(store.get('a', 'r1')).toBeUndefined();
    expect(['r2', 'r3', 'r4'].map((id) => store.get('a', id)?.id)).toEqual(['r2', 'r3', 'r4']);
    // Another owner's records count on their own.
    expect(store.get('b', 'r5')?.id).toBe('r5');
    await store.close();
  });

  it('removes a record for its owner only', async () => {
    const clock = new ManualClock();
    const store = make(clock);
    store.save(record('a', 'r1', clock.now()));
    expect(store.remove('b', 'r1')).toBe(false);
    expect(store.get('a', 'r1')).toBeDefined();
    expect(store.remove('a', 'r1')).toBe(true);
    expect(store.get('a', 'r1')).toBeUndefined();
    expect(store.remove('a', 'r1')).toBe(false);
    await store.close();
  });
});

describe('MemoryResponseStore', () => {
  it('bounds the records of all owners together', () => {
    const clock = new ManualClock();
    const store = new MemoryResponseStore({ ...bounds, clock, maxTotal: 2 });
    store.save(record('a', 'r1', clock.now()));
    store.save(record('b', 'r2', clock.now()));
    store.save(record('c', 'r3', clock.now()));
    expect(store.size).toBe(2);
    expect(store.get('a', 'r1')).toBeUndefined();
    expect(store.get('c', 'r3')).toBeDefined();
  });
});

describe('SqliteResponseStore', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps records in <data_dir>/responses.db across a reopen', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-responses-'));
    dirs.push(dir);
    const clock = new ManualClock();
    const options = { ...bounds, clock, logger: silentLogger };
    const first = SqliteResponseStore.open(dir, options);
    first.save(record('k', 'resp_1', clock.now()));
    await first.close();
    expect(fs.existsSync(path.join(dir, RESPONSE_DATABASE_FILE))).toBe(true);
    const second = SqliteResponseStore.open(dir, options);
    expect(second.get('k', 'resp_1')?.inputItems).toEqual(record('k', 'resp_1', 0).inputItems);
    await second.close();
  });

  it('answers a row whose JSON no longer parses as absent', async () => {
    const clock = new ManualClock();
    const db = new Database(':memory:');
    const store = SqliteResponseStore.over(db, { ...bounds, clock, logger: silentLogger });
    store.save(record('k', 'resp_1', clock.now()));
    db.prepare("UPDATE responses SET response = '{' WHERE id = 'resp_1'").run();
    expect(store.get('k', 'resp_1')).toBeUndefined();
    await store.close();
  });
});

describe('responseStoreBounds', () => {
  it('turns openai.responses into milliseconds and a count', () => {
    expect(responseStoreBounds({ store_ttl_days: 30, store_max_per_key: 1000 })).toEqual({
      ttlMs: 30 * 24 * HOUR,
      maxPerKey: 1000,
    });
  });
});
