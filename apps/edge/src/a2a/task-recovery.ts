// How A2A tasks (run registry kind `a2a.task`) are kept across edge restarts: a task's record is written when its
// status changes (its state or its history grows), not per streamed artifact chunk, and a task an earlier edge
// process left unfinished becomes `failed` with an agent status message naming the edge restart
// (agent-contract/outer/a2a-json-rpc-api.md, "Restart semantics"). Registered by the A2A surface at start.
import type { RunKindDurability, RunRegistry } from '../service/run-registry.js';
import type { Task } from './a2a-types.js';
import { agentMessage } from './task-manager.js';

export const TASK_DURABILITY: RunKindDurability = {
  revision: (state) => {
    const task = state as Partial<Task> | null;
    return `${task?.status?.state ?? ''}/${(task?.history?.length ?? 0).toString()}`;
  },
  interrupted: (state, restart) => {
    const task = state as Task;
    const text =
      `edge_restarted: the edge ${restart.edgeId || '(unnamed)'} restarted while this task was ` +
      `${task.status.state}; it did not finish and was not started again.`;
    const message = agentMessage(task, text);
    return {
      ...task,
      status: { state: 'failed', message, timestamp: new Date(restart.atMs).toISOString() },
      history: [...(task.history ?? []), message],
    } satisfies Task;
  },
};

/** Registers the A2A task kind's durability with the service's run registry. */
export function registerTaskRecovery(registry: RunRegistry): void {
  registry.durability('a2a.task', TASK_DURABILITY);
}
