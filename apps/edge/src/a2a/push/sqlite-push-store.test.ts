// The SQLite push store and the in-memory fake behave alike (one table of cases over both); the SQLite one keeps
// configs and queued notifications across a reopen of the same data_dir.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../logging.js';
import { MemoryPushStore } from '../test-support/memory-push-store.js';
import type { PushConfig } from './push-config.js';
import type { NewPushDelivery, PushStore } from './push-store.js';
import { PUSH_DATABASE_FILE, SqlitePushStore } from './sqlite-push-store.js';

const config = (id: string, taskId = 't1'): PushConfig => ({
  id,
  taskId,
  url: `https://hooks.example/${id}`,
  token: `token-${id}`,
  authentication: { scheme: 'Bearer', credentials: 'c' },
  protocol: '1.0',
});

const delivery = (configId: string, body: string, taskId = 't1'): NewPushDelivery => ({
  principal: 'k1',
  taskId,
  configId,
  url: `https://hooks.example/${configId}`,
  token: `token-${configId}`,
  contentType: 'application/json',
  body,
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const stores: [string, () => PushStore][] = [
  ['sqlite', () => SqlitePushStore.over(new Database(':memory:'))],
  ['memory', () => new MemoryPushStore()],
];

describe.each(stores)('%s push store', (_name, open) => {
  it('keeps configs per owner and task, replaced by id, deleted with their queued notifications', async () => {
    const store = open();
    store.saveConfig('k1', config('a'));
    store.saveConfig('k1', config('b'));
    store.saveConfig('k1', { ...config('a'), url: 'https://hooks.example/new' });
    expect(store.listConfigs('k1', 't1').map((entry) => entry.id)).toEqual(['b', 'a']);
    expect(store.getConfig('k1', 't1', 'a')?.url).toBe('https://hooks.example/new');
    expect(store.listConfigs('k2', 't1')).toEqual([]);
    store.enqueue([delivery('a', '1')], 1_000, false);
    expect(store.deleteConfig('k1', 't1', 'a')).toBe(true);
    expect(store.deleteConfig('k1', 't1', 'a')).toBe(false);
    expect(store.due(10_000, 10)).toEqual([]);
    await store.close();
  });

  it('replaces a config undelivered notification, queues the terminal one once, and schedules by due time', async () => {
    const store = open();
    store.saveConfig('k1', config('a'));
    store.saveConfig('k1', config('b'));
    expect(store.unfinishedTasks()).toEqual([{ principal: 'k1', taskId: 't1' }]);
    store.enqueue([delivery('a', 'working')], 1_000, false);
    store.enqueue([delivery('a', 'completed'), delivery('b', 'completed')], 2_000, true);
    store.enqueue([delivery('a', 'completed again')], 3_000, true);
    expect(store.unfinishedTasks()).toEqual([]);
    const due = store.due(2_000, 10);
    expect(due.map((entry) => [entry.configId, entry.body, entry.attempts])).toEqual([
      ['a', 'completed', 0],
      ['b', 'completed', 0],
    ]);
    const first = due[0];
    if (!first) throw new Error('expected a delivery');
    store.reschedule(first.id, 1, 5_000);
    expect(store.due(4_000, 10).map((entry) => entry.configId)).toEqual(['b']);
    expect(store.nextDueAt()).toBe(2_000);
    store.remove(due[1]?.id ?? 0);
    expect(store.nextDueAt()).toBe(5_000);
    expect(store.due(5_000, 10)[0]).toMatchObject({ attempts: 1, queuedAt: 2_000, token: 'token-a' });
    store.forgetTask({ principal: 'k1', taskId: 't1' });
    expect(store.configuredTasks()).toEqual([]);
    expect(store.nextDueAt()).toBeUndefined();
    await store.close();
  });
});

describe('SqlitePushStore', () => {
  it('keeps configs and queued notifications across a reopen of the same data_dir', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-push-'));
    dirs.push(dir);
    const first = SqlitePushStore.open(dir, silentLogger);
    first.saveConfig('k1', config('a'));
    first.enqueue([delivery('a', '{"id":"t1"}')], 1_000, true);
    await first.close();
    expect(fs.existsSync(path.join(dir, PUSH_DATABASE_FILE))).toBe(true);
    const second = SqlitePushStore.open(dir, silentLogger);
    expect(second.getConfig('k1', 't1', 'a')).toEqual(config('a'));
    expect(second.due(1_000, 10)).toMatchObject([{ configId: 'a', body: '{"id":"t1"}', token: 'token-a' }]);
    await second.close();
  });
});
