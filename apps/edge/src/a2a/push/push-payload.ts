// The body of a task's notification in the protocol that registered the config: 0.3 POSTs the Task object
// (application/json); 1.0 POSTs a StreamResponse carrying the task (`{ "task": {...} }`, application/a2a+json),
// the payload the 1.0 specification gives for push notifications.
import type { Task } from '../a2a-types.js';
import type { A2AProtocol } from '../protocol-version.js';
import { toV1Task } from '../v1/v1-translation.js';

export function pushPayload(task: Task, protocol: A2AProtocol): { contentType: string; body: string } {
  switch (protocol) {
    case '0.3':
      return { contentType: 'application/json', body: JSON.stringify(task) };
    case '1.0':
      return { contentType: 'application/a2a+json', body: JSON.stringify({ task: toV1Task(task) }) };
    default: {
      const unreachable: never = protocol;
      throw new Error(`unknown protocol ${String(unreachable)}`);
    }
  }
}
