import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../clock.js';
import { RunRegistry } from '../service/run-registry.js';
import { MemoryRunRecordStore } from '../service/test-support/memory-run-record-store.js';
import type { Task } from './a2a-types.js';
import { registerTaskRecovery, TASK_DURABILITY } from './task-recovery.js';

const working: Task = {
  kind: 'task',
  id: 't1',
  contextId: 'c1',
  status: { state: 'working', timestamp: '2026-01-01T00:00:00.000Z' },
  history: [{ kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'go' }] }],
  artifacts: [],
};

describe('A2A task recovery', () => {
  it('ends a task left working as failed with a status message naming the edge restart', async () => {
    const store = new MemoryRunRecordStore();
    const key = { principal: 'team', kind: 'a2a.task' as const, id: 't1' };
    new RunRegistry({ clock: systemClock, store, origin: { edgeId: 'edge-a', boot: 'b1' } }).add(
      key,
      working,
      () => undefined,
    );
    const next = new RunRegistry({ clock: systemClock, store, origin: { edgeId: 'edge-a', boot: 'b2' } });
    next.restore();
    registerTaskRecovery(next);
    const task = (await next.get(key))?.state as Task;
    expect(task.status.state).toBe('failed');
    expect(task.status.message?.parts[0]).toEqual({
      kind: 'text',
      text: expect.stringContaining(
        'edge_restarted: the edge edge-a restarted while this task was working',
      ) as unknown as string,
    });
    expect(task.history?.at(-1)).toEqual(task.status.message);
    expect(task.history).toHaveLength(2);
  });

  it('changes its revision on a new state or history message, not on an artifact chunk', () => {
    const chunked: Task = {
      ...working,
      artifacts: [{ artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] }],
    };
    expect(TASK_DURABILITY.revision(chunked)).toBe(TASK_DURABILITY.revision(working));
    expect(TASK_DURABILITY.revision({ ...working, status: { state: 'completed' } })).not.toBe(
      TASK_DURABILITY.revision(working),
    );
  });

  it('names the cluster failover when another edge answers for a task its gone edge left working', () => {
    const task = TASK_DURABILITY.interrupted(working, {
      edgeId: 'edge-a',
      atMs: Date.parse('2026-01-01T00:00:05.000Z'),
      answeredBy: 'edge-b',
    }) as Task;
    expect(task.status.state).toBe('failed');
    expect(task.status.timestamp).toBe('2026-01-01T00:00:05.000Z');
    const part = task.status.message?.parts[0];
    expect(part).toEqual({
      kind: 'text',
      text: expect.stringContaining(
        'edge_lost: the edge edge-a left the cluster while this task was working (cluster failover: edge edge-b',
      ) as unknown as string,
    });
  });
});
