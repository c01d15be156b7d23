// A2A protocol 0.3 shapes served by the edge (the subset IOP speaks). Field names follow the protocol exactly.
// They are also the task manager's own shapes for both protocol versions (v1/v1-translation.ts converts).

export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'canceled'
  | 'failed'
  | 'rejected'
  | 'auth-required'
  | 'unknown';

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  'completed',
  'canceled',
  'failed',
  'rejected',
]);

export type Part =
  | { kind: 'text'; text: string; metadata?: Record<string, unknown> }
  | {
      kind: 'file';
      file: { bytes?: string; uri?: string; mimeType?: string; name?: string };
      metadata?: Record<string, unknown>;
    }
  | { kind: 'data'; data: Record<string, unknown>; metadata?: Record<string, unknown> };

export interface Message {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: Part[];
  contextId?: string;
  taskId?: string;
  metadata?: Record<string, unknown>;
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
}

export interface Task {
  kind: 'task';
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Record<string, unknown>;
}

export interface TaskStatusUpdateEvent {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
}

export interface TaskArtifactUpdateEvent {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

/** What a streaming call sends, one per SSE event. */
export type StreamEvent = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
}

/** An endpoint of the agent and the protocol version it speaks there (A2A 1.0 `AgentInterface`). */
export interface AgentInterface {
  url: string;
  protocolBinding: 'JSONRPC';
  protocolVersion: string;
}

/**
 * A bearer scheme in both card dialects at once: 0.3 reads `type`/`scheme`, 1.0 reads the
 * `httpAuthSecurityScheme` member of its oneof.
 */
export interface BearerSecurityScheme {
  type: 'http';
  scheme: 'bearer';
  description?: string;
  httpAuthSecurityScheme: { scheme: 'bearer'; description?: string };
}

/**
 * The one agent card, read by 0.3 clients (url, protocolVersion, preferredTransport, security) and by 1.0 clients
 * (supportedInterfaces, securityRequirements); each dialect ignores the other's fields.
 */
export interface AgentCard {
  name: string;
  description: string;
  url: string;
  version: string;
  protocolVersion: string;
  preferredTransport: 'JSONRPC';
  supportedInterfaces: AgentInterface[];
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  securitySchemes?: Record<string, BearerSecurityScheme>;
  /** 0.3 */
  security?: Record<string, string[]>[];
  /** 1.0 */
  securityRequirements?: { schemes: Record<string, { list: string[] }> }[];
}
