import { describe, expect, it } from '@jest/globals';
import type { Task, TaskState } from './a2a-types.js';
import { pageTasks } from './task-listing.js';

function task(id: string, state: TaskState, timestamp: string, contextId = 'c1'): Task {
  return {
    kind: 'task',
    id,
    contextId,
    status: { state, timestamp },
    artifacts: [{ artifactId: `${id}-output`, parts: [{ kind: 'text', text: id }] }],
    history: [
      { kind: 'message', messageId: `${id}-u`, role: 'user', parts: [{ kind: 'text', text: 'q' }] },
      { kind: 'message', messageId: `${id}-a`, role: 'agent', parts: [{ kind: 'text', text: 'a' }] },
    ],
  };
}

const newestFirst = [
  task('t3', 'working', '2026-01-01T00:03:00Z', 'c2'),
  task('t2', 'completed', '2026-01-01T00:02:00Z'),
  task('t1', 'completed', '2026-01-01T00:01:00Z'),
];

describe('pageTasks', () => {
  it('pages with an opaque token and reports the total', () => {
    const first = pageTasks(newestFirst, { pageSize: 2 });
    expect(first.tasks.map((t) => t.id)).toEqual(['t3', 't2']);
    expect(first.totalSize).toBe(3);
    expect(first.nextPageToken).not.toBe('');
    const second = pageTasks(newestFirst, { pageSize: 2, pageToken: first.nextPageToken });
    expect(second.tasks.map((t) => t.id)).toEqual(['t1']);
    expect(second.nextPageToken).toBe('');
  });

  it('filters by context, state and status time', () => {
    expect(pageTasks(newestFirst, { contextId: 'c1' }).tasks.map((t) => t.id)).toEqual(['t2', 't1']);
    expect(pageTasks(newestFirst, { state: 'working' }).tasks.map((t) => t.id)).toEqual(['t3']);
    const after = pageTasks(newestFirst, { statusTimestampAfter: '2026-01-01T00:01:30Z' });
    expect(after.tasks.map((t) => t.id)).toEqual(['t3', 't2']);
  });

  it('leaves artifacts out unless asked, trims history, and does not touch the stored tasks', () => {
    const plain = pageTasks(newestFirst, { historyLength: 1 });
    expect(plain.tasks[0]?.artifacts).toBeUndefined();
    expect(plain.tasks[0]?.history?.map((m) => m.messageId)).toEqual(['t3-a']);
    expect(pageTasks(newestFirst, { includeArtifacts: true }).tasks[0]?.artifacts).toHaveLength(1);
    expect(newestFirst[0]?.artifacts).toHaveLength(1);
    expect(newestFirst[0]?.history).toHaveLength(2);
  });

  it('refuses a bad page size, token or timestamp as invalid params', () => {
    for (const query of [
      { pageSize: 0 },
      { pageSize: 101 },
      { pageToken: Buffer.from('nope').toString('base64url') },
      { statusTimestampAfter: 'yesterday' },
    ]) {
      expect(() => pageTasks(newestFirst, query)).toThrow(expect.objectContaining({ code: -32602 }));
    }
  });
});
