// Surface-neutral edge operations. Every surface (console, OpenAI, A2A, admin) calls these and nothing below them.
import type {
  ChatMessage,
  GenerationParams,
  NodeCommandRequest,
  NodeCommandResponse,
  RunEventPart,
  ToolDefinition,
} from '@iop/wire';

export interface SubmitRunInput {
  /** Node id or alias; omitted = the only connected node (an error asks for a choice when several are). */
  node?: string;
  adapter: string;
  target: string;
  sessionId: string;
  background?: boolean;
  workspace?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** JSON text of an OpenAI-style tool_choice. */
  toolChoiceJson?: string;
  params?: GenerationParams;
  timeoutMs?: number;
  providerId?: string;
  metadata?: Record<string, string>;
  /** Run id to use; generated when omitted. */
  runId?: string;
  /** Aborting it cancels the run on the node (client disconnect). */
  signal?: AbortSignal;
}

export interface RunEventWithMeta {
  runId: string;
  nodeId: string;
  seq: number;
  atUnixMs: number;
  part: RunEventPart;
}

export type RunOutcome =
  | { status: 'completed'; detail: string; finishReason: string }
  | { status: 'error'; code: string; message: string }
  | { status: 'cancelled'; reason: string };

export interface RunHandle {
  runId: string;
  nodeId: string;
  /**
   * The run's events, ending after its terminal part. Single consumer. For background runs it may be ignored:
   * events are still published on the event bus and the run is still tracked until it ends.
   */
  events: AsyncIterable<RunEventWithMeta>;
  /** Settles when the run reaches its terminal part (never rejects). */
  done: Promise<RunOutcome>;
  /** Sends CANCEL_RUN; the run then ends with a `cancelled` (or terminal) part. Idempotent. */
  cancel(reason?: string): Promise<void>;
  /** Milliseconds from submit to the terminal part, minus the backend time the node reported. */
  overheadMs(): number | undefined;
}

export interface NodeSummary {
  nodeId: string;
  alias: string;
  agentVersion: string;
  os: string;
  arch: string;
  hostname: string;
  remoteAddress: string;
  connectedSinceUnixMs: number;
  lastHeartbeatUnixMs: number;
  adapters: string[];
  providers: ProviderHealthSummary[];
}

export interface ProviderHealthSummary {
  providerId: string;
  health: 'healthy' | 'unhealthy' | 'unreachable' | 'unknown';
  detail: string;
  checkedAtUnixMs: number;
}

export interface NodeCommandInput {
  node?: string;
  request: NodeCommandRequest;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface SessionRef {
  node?: string;
  adapter: string;
  target: string;
  sessionId: string;
}

export interface EdgeService {
  submitRun(input: SubmitRunInput): Promise<RunHandle>;
  /** Returns false when no run with that id is in flight. */
  cancelRun(runId: string, reason?: string): Promise<boolean>;
  /** Returns the node id the session lived on. */
  terminateSession(ref: SessionRef): Promise<string>;
  nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse>;
  /** `status` node command for a CLI target's usage limits. */
  usageStatus(ref: SessionRef): Promise<NodeCommandResponse>;
  listNodes(): NodeSummary[];
  /** Explicit id or alias; none given → the single connected node; otherwise a ServiceError. */
  resolveNode(ref?: string): NodeSummary;
}
