// A2A protocol 1.0 shapes as they travel over JSON-RPC (the ProtoJSON form of the lf.a2a.v1 messages: enum
// values by name, camelCase fields, one member set per oneof). The edge keeps its tasks in the 0.3 shapes of
// ../a2a-types.ts; v1-translation.ts converts at the surface.

export type V1TaskState =
  | 'TASK_STATE_UNSPECIFIED'
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_REJECTED'
  | 'TASK_STATE_AUTH_REQUIRED';

export type V1Role = 'ROLE_USER' | 'ROLE_AGENT';

/** One part: exactly one of text, url, data or raw (base64), with optional media type and file name. */
export interface V1Part {
  text?: string;
  url?: string;
  data?: unknown;
  raw?: string;
  mediaType?: string;
  filename?: string;
  metadata?: Record<string, unknown>;
}

export interface V1Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: V1Role;
  parts: V1Part[];
  metadata?: Record<string, unknown>;
}

export interface V1TaskStatus {
  state: V1TaskState;
  message?: V1Message;
  timestamp?: string;
}

export interface V1Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: V1Part[];
}

export interface V1Task {
  id: string;
  contextId: string;
  status: V1TaskStatus;
  artifacts?: V1Artifact[];
  history?: V1Message[];
  metadata?: Record<string, unknown>;
}

/** 1.0 has no `final` flag: the stream ends after the terminal status. */
export interface V1TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: V1TaskStatus;
}

export interface V1TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: V1Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

/** What one SSE event of SendStreamingMessage / SubscribeToTask carries (and a push notification's body). */
export type V1StreamResponse =
  | { task: V1Task }
  | { message: V1Message }
  | { statusUpdate: V1TaskStatusUpdateEvent }
  | { artifactUpdate: V1TaskArtifactUpdateEvent };

export interface V1ListTasksResponse {
  tasks: V1Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}
