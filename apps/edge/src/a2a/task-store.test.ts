import { describe, expect, it } from '@jest/globals';
import type { Task } from './a2a-types.js';
import { TaskStore, TaskStoreFullError } from './task-store.js';

function task(id: string): Task {
  return { kind: 'task', id, contextId: 'c', status: { state: 'working' } };
}

function finishAs(store: TaskStore, id: string): void {
  const record = store.get(id)!;
  record.task.status = { state: 'completed' };
  store.finish(record);
}

describe('TaskStore', () => {
  it('forgets finished tasks after their TTL but keeps running ones', () => {
    let now = 0;
    const store = new TaskStore({ maxTasks: 10, finishedTtlMs: 1000, now: () => now });
    store.add(task('done'));
    store.add(task('running'));
    finishAs(store, 'done');
    now = 999;
    expect(store.get('done')).toBeDefined();
    now = 1000;
    expect(store.get('done')).toBeUndefined();
    now = 1_000_000;
    expect(store.get('running')).toBeDefined();
  });

  it('evicts the oldest finished task when full, and refuses new tasks when only running ones remain', () => {
    const store = new TaskStore({ maxTasks: 2, finishedTtlMs: 60_000, now: () => 0 });
    store.add(task('a'));
    store.add(task('b'));
    finishAs(store, 'a');
    store.add(task('c'));
    expect(store.get('a')).toBeUndefined();
    expect(store.size).toBe(2);
    expect(() => store.add(task('d'))).toThrow(TaskStoreFullError);
  });

  it('resolves `finished` once the task is finished', async () => {
    const store = new TaskStore({ maxTasks: 2, finishedTtlMs: 60_000, now: () => 0 });
    const record = store.add(task('a'));
    let settled = false;
    void record.finished.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    finishAs(store, 'a');
    await record.finished;
    expect(settled).toBe(true);
  });
});
