// Translation between the A2A 1.0 wire shapes (v1-types.ts) and the 0.3 shapes the task manager keeps
// (../a2a-types.ts), so that one engine serves both protocol versions. Outbound: tasks, messages, parts and
// stream events. Inbound: a 1.0 message becomes the 0.3 message the task manager validates (parseMessage), and
// a 1.0 task-state filter becomes a 0.3 state.
import type { Artifact, Message, Part, StreamEvent, Task, TaskState, TaskStatus } from '../a2a-types.js';
import { JSON_RPC_ERRORS, JsonRpcError } from '../json-rpc.js';
import type {
  V1Artifact,
  V1Message,
  V1Part,
  V1StreamResponse,
  V1Task,
  V1TaskState,
  V1TaskStatus,
} from './v1-types.js';

const STATE_TO_V1: Record<TaskState, V1TaskState> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  unknown: 'TASK_STATE_UNSPECIFIED',
};

const STATE_FROM_V1 = new Map<string, TaskState>(
  Object.entries(STATE_TO_V1).map(([legacy, v1]) => [v1, legacy as TaskState]),
);

export function toV1State(state: TaskState): V1TaskState {
  return STATE_TO_V1[state];
}

/** A 1.0 state name (a ListTasks filter) as the 0.3 state; undefined for UNSPECIFIED (no filter). */
export function fromV1State(value: unknown, where: string): TaskState | undefined {
  if (value === undefined || value === null || value === '' || value === 'TASK_STATE_UNSPECIFIED') {
    return undefined;
  }
  const state = typeof value === 'string' ? STATE_FROM_V1.get(value) : undefined;
  if (state === undefined) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be a TASK_STATE_* name`);
  }
  return state;
}

export function toV1Part(part: Part): V1Part {
  const metadata = part.metadata ? { metadata: part.metadata } : {};
  switch (part.kind) {
    case 'text':
      return { text: part.text, ...metadata };
    case 'data':
      return { data: part.data, mediaType: 'application/json', ...metadata };
    case 'file':
      return {
        ...(part.file.uri !== undefined ? { url: part.file.uri } : { raw: part.file.bytes ?? '' }),
        ...(part.file.mimeType ? { mediaType: part.file.mimeType } : {}),
        ...(part.file.name ? { filename: part.file.name } : {}),
        ...metadata,
      };
    default: {
      const unreachable: never = part;
      throw new Error(`unknown part ${JSON.stringify(unreachable)}`);
    }
  }
}

export function toV1Message(message: Message): V1Message {
  return {
    messageId: message.messageId,
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
    role: message.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: message.parts.map(toV1Part),
    ...(message.metadata ? { metadata: message.metadata } : {}),
  };
}

function toV1Status(status: TaskStatus): V1TaskStatus {
  return {
    state: toV1State(status.state),
    ...(status.message ? { message: toV1Message(status.message) } : {}),
    ...(status.timestamp ? { timestamp: status.timestamp } : {}),
  };
}

function toV1Artifact(artifact: Artifact): V1Artifact {
  return {
    artifactId: artifact.artifactId,
    ...(artifact.name ? { name: artifact.name } : {}),
    ...(artifact.description ? { description: artifact.description } : {}),
    parts: artifact.parts.map(toV1Part),
  };
}

export function toV1Task(task: Task): V1Task {
  return {
    id: task.id,
    contextId: task.contextId,
    status: toV1Status(task.status),
    ...(task.artifacts ? { artifacts: task.artifacts.map(toV1Artifact) } : {}),
    ...(task.history ? { history: task.history.map(toV1Message) } : {}),
    ...(task.metadata ? { metadata: task.metadata } : {}),
  };
}

export function toV1StreamResponse(event: StreamEvent): V1StreamResponse {
  switch (event.kind) {
    case 'task':
      return { task: toV1Task(event) };
    case 'status-update':
      return {
        statusUpdate: { taskId: event.taskId, contextId: event.contextId, status: toV1Status(event.status) },
      };
    case 'artifact-update':
      return {
        artifactUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          artifact: toV1Artifact(event.artifact),
          ...(event.append ? { append: true } : {}),
          ...(event.lastChunk ? { lastChunk: true } : {}),
        },
      };
    default: {
      const unreachable: never = event;
      throw new Error(`unknown stream event ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * A 1.0 message (as received) in the 0.3 shape; the task manager's parseMessage validates the result, so this
 * only renames: ROLE_USER → user, a part's text/url/data/raw member → a text/file/data part. Non-object data
 * (1.0 allows any JSON value) is wrapped as `{ value }`.
 */
export function fromV1Message(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const message = value as Record<string, unknown>;
  const role = message['role'];
  const parts = message['parts'];
  return {
    kind: 'message',
    messageId: message['messageId'],
    role: role === 'ROLE_USER' ? 'user' : role === 'ROLE_AGENT' ? 'agent' : role,
    parts: Array.isArray(parts) ? parts.map(fromV1Part) : parts,
    ...(nonEmpty(message['contextId']) ? { contextId: message['contextId'] } : {}),
    ...(nonEmpty(message['taskId']) ? { taskId: message['taskId'] } : {}),
  };
}

/** ProtoJSON leaves an unset string out or sends it empty: both mean "not given". */
function nonEmpty(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function fromV1Part(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const part = value as Record<string, unknown>;
  if (typeof part['text'] === 'string') return { kind: 'text', text: part['text'] };
  const file = {
    ...(typeof part['mediaType'] === 'string' && part['mediaType'] !== ''
      ? { mimeType: part['mediaType'] }
      : {}),
    ...(typeof part['filename'] === 'string' && part['filename'] !== '' ? { name: part['filename'] } : {}),
  };
  if (typeof part['url'] === 'string') return { kind: 'file', file: { uri: part['url'], ...file } };
  if (typeof part['raw'] === 'string') return { kind: 'file', file: { bytes: part['raw'], ...file } };
  if ('data' in part) {
    const data = part['data'];
    const isObject = typeof data === 'object' && data !== null && !Array.isArray(data);
    return { kind: 'data', data: isObject ? data : { value: data } };
  }
  return { kind: undefined };
}
