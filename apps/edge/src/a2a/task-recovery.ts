// How A2A tasks (run registry kind `a2a.task`) are kept across edge restarts: a task's record is written when its
// status changes (its state or its history grows), not per streamed artifact chunk, and a task an earlier edge
// process left unfinished becomes `failed` with an agent status message naming the edge restart
// (agent-contract/outer/a2a-json-rpc-api.md, "Restart semantics"). A `submitted` task is not placed again (no
// `resume` hook, unlike background responses): it only waits without a run behind an earlier turn of its context,
// which died with the process too, and its input — the context's conversation — is in-memory (model servers) or
// in a node session the cut turn left unknown (CLI), so a re-run would answer a different conversation than the
// one the client sent it into. In cluster mode a task whose edge left the
// cluster is answered by another edge from the fabric's copy, failed the same way with `edge_lost` named (cluster
// failover). Registered by the A2A surface at start.
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
    const edge = restart.edgeId || '(unnamed)';
    const text =
      restart.answeredBy === undefined
        ? `edge_restarted: the edge ${edge} restarted while this task was ${task.status.state}; ` +
          'it did not finish and was not started again.'
        : `edge_lost: the edge ${edge} left the cluster while this task was ${task.status.state} (cluster ` +
          `failover: edge ${restart.answeredBy} answered from the cluster's record); it did not finish and was ` +
          'not started again.';
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
