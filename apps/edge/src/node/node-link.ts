// NodeLink: the edge's end of one authenticated node connection, after the handshake (the node's end is
// apps/node's EdgeLink).
//
// Responsibilities: send run / cancel / command / config-refresh messages; route incoming run events to the
// observer registered for their run id; correlate request/response pairs by `Envelope.requestId` with a timeout;
// keep what the node reported (heartbeats, provider health). Lifecycle: created by the transport when a node is
// accepted, `markClosed(reason)` exactly once when the connection ends (by either side): every pending request is
// rejected with NodeLinkError `link_closed` and every run observer is told, so nothing waits forever.
// The transport owns the socket and the heartbeat timers; the link never closes the channel by itself except
// through `close()`.
import {
  CancelAction,
  fromWireRunEvent,
  isTerminalPart,
  ProviderHealth,
  ResidentState,
  type CancelRequest,
  type Envelope,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type NodeConfigPayload,
  type NodeConfigRefreshResult,
  type ProviderHealthEntry,
  type ProviderLifecycleProgress,
  type ProviderStatusReport,
  type RunEventEnvelope,
  type RunKind,
  type RunRequest,
} from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { NodeSummary, ProviderHealthSummary } from '../present/node-summary.js';
import { fromWireDiscovery, type NodeDiscovered } from '../present/node-discovered.js';
import { NodeLinkError } from './errors.js';
import { ModelCallRelay, type ModelCallTermination } from './model-call-relay.js';

/** What the link needs from a connection; `FramedConnection` from @iop/wire satisfies it. */
export interface LinkChannel {
  send(envelope: Envelope): Promise<void>;
  close(reason: string, options?: { goodbye?: boolean; detail?: string }): Promise<void>;
}

/** Receives the events of one run. Called synchronously from the connection's read loop: must not block. */
/** A logical session on the node: what cancel and terminate address. */
export interface SessionTarget {
  adapter: string;
  target: string;
  sessionId: string;
}

export interface RunObserver {
  onEvent(event: RunEventEnvelope): void;
  /** The connection ended before the run's terminal event. */
  onLinkClosed(reason: string): void;
}

export interface NodeLinkInfo {
  nodeId: string;
  alias: string;
  agentVersion: string;
  os: string;
  arch: string;
  hostname: string;
  remoteAddress: string;
  supportedAdapters: string[];
  /** Run kinds besides chat the node executes (RegisterRequest.run_kinds); empty for older nodes. */
  runKinds: RunKind[];
  connectedSinceUnixMs: number;
  /** `sha256:…` of the identity key the node proved at registration ('' or absent: an agent without one). */
  identityFingerprint?: string;
}

export interface NodeLinkOptions {
  channel: LinkChannel;
  info: NodeLinkInfo;
  payload: NodeConfigPayload;
  logger: Logger;
  clock?: Clock;
  /** Default request timeout for commands and refreshes. */
  requestTimeoutMs?: number;
  /** Where agents' model calls from this node are served (model-call-relay.ts); none = every call is refused. */
  modelCalls?: ModelCallTermination;
}

export interface RequestOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Lifecycle commands (pull_model) stream progress under the command's request id. */
  onProgress?: (progress: ProviderLifecycleProgress) => void;
}

interface PendingRequest {
  kind: 'nodeCommandResponse' | 'nodeConfigRefreshResult';
  resolve(envelope: Envelope): void;
  reject(error: Error): void;
  onProgress?: ((progress: ProviderLifecycleProgress) => void) | undefined;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export class NodeLink {
  readonly info: NodeLinkInfo;
  private currentPayload: NodeConfigPayload;
  private readonly channel: LinkChannel;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly requestTimeoutMs: number;
  private readonly runs = new Map<string, RunObserver>();
  private readonly pending = new Map<string, PendingRequest>();
  private readonly closeListeners: ((reason: string) => void)[] = [];
  private discoveryListener: ((discovered: NodeDiscovered) => void) | undefined;
  private discoveredState: NodeDiscovered | undefined;
  private providerHealth: ProviderHealthSummary[] = [];
  private nextRequestId = 1;
  private closeReason: string | undefined;
  private readonly modelCalls: ModelCallRelay;
  lastHeartbeatUnixMs: number;
  /** Any frame from the node counts as a sign of life for the heartbeat deadline. */
  lastSeenUnixMs: number;

  constructor(options: NodeLinkOptions) {
    this.channel = options.channel;
    this.info = options.info;
    this.currentPayload = options.payload;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.lastHeartbeatUnixMs = this.clock.now();
    this.lastSeenUnixMs = this.lastHeartbeatUnixMs;
    this.modelCalls = new ModelCallRelay({
      nodeId: this.info.nodeId,
      termination: options.modelCalls ?? { server: () => undefined, confirmParent: () => false },
      send: (message) => this.send(message),
      logger: this.logger,
      clock: this.clock,
    });
  }

  /** Agents' model calls open on this link (tests, diagnostics). */
  get openModelCalls(): number {
    return this.modelCalls.size;
  }

  get nodeId(): string {
    return this.info.nodeId;
  }

  get payload(): NodeConfigPayload {
    return this.currentPayload;
  }

  get closed(): boolean {
    return this.closeReason !== undefined;
  }

  get closedReason(): string | undefined {
    return this.closeReason;
  }

  get inFlightRuns(): number {
    return this.runs.size;
  }

  get pendingRequests(): number {
    return this.pending.size;
  }

  get providers(): ProviderHealthSummary[] {
    return this.providerHealth;
  }

  /** The node's latest discovery report; undefined until one arrives (older nodes never send one). */
  get discovered(): NodeDiscovered | undefined {
    return this.discoveredState;
  }

  /** One listener (the transport's event publisher), called after each discovery report is stored. */
  onDiscovered(listener: (discovered: NodeDiscovered) => void): void {
    this.discoveryListener = listener;
  }

  summary(): NodeSummary {
    return {
      nodeId: this.info.nodeId,
      alias: this.info.alias,
      agentVersion: this.info.agentVersion,
      os: this.info.os,
      arch: this.info.arch,
      hostname: this.info.hostname,
      remoteAddress: this.info.remoteAddress,
      connectedSinceUnixMs: this.info.connectedSinceUnixMs,
      lastHeartbeatUnixMs: this.lastHeartbeatUnixMs,
      adapters: this.currentPayload.adapters
        .filter((adapter) => adapter.enabled)
        .map((adapter) => adapter.name),
      providers: this.providerHealth.map((entry) => ({ ...entry })),
      ...(this.discoveredState ? { discovered: this.discoveredState } : {}),
      ...(this.info.identityFingerprint ? { identityFingerprint: this.info.identityFingerprint } : {}),
    };
  }

  /**
   * Registers `observer` for the run, then sends the request. On failure nothing stays registered. (A promise
   * chain, not an async function: one suspended frame less per run while its frame waits for the socket.)
   */
  startRun(request: RunRequest, observer: RunObserver): Promise<void> {
    if (this.closeReason !== undefined) return Promise.reject(this.closedError());
    if (this.runs.has(request.runId)) {
      return Promise.reject(
        new NodeLinkError('duplicate_run', `run ${request.runId} is already in flight on ${this.nodeId}`),
      );
    }
    this.runs.set(request.runId, observer);
    return this.send({ requestId: '', msg: { $case: 'runRequest', runRequest: request } }).catch(
      (error: unknown) => {
        if (this.runs.get(request.runId) === observer) this.runs.delete(request.runId);
        throw error;
      },
    );
  }

  /** Stops routing events of the run (after its terminal event, or when the edge gives up on it). */
  releaseRun(runId: string): void {
    this.runs.delete(runId);
  }

  hasRun(runId: string): boolean {
    return this.runs.has(runId);
  }

  async cancel(request: CancelRequest): Promise<void> {
    this.assertOpen();
    await this.send({ requestId: '', msg: { $case: 'cancelRequest', cancelRequest: request } });
  }

  /** CANCEL_RUN for one run (its session stays). The wire enum stays inside the link. */
  cancelRun(target: SessionTarget & { runId: string }, reason: string): Promise<void> {
    return this.cancel({ action: CancelAction.CANCEL_ACTION_CANCEL_RUN, ...target, reason });
  }

  /** TERMINATE_SESSION: ends the session's runs and its process on the node. */
  terminateSession(target: SessionTarget, reason: string): Promise<void> {
    return this.cancel({
      action: CancelAction.CANCEL_ACTION_TERMINATE_SESSION,
      runId: '',
      ...target,
      reason,
    });
  }

  async command(request: NodeCommandRequest, options: RequestOptions = {}): Promise<NodeCommandResponse> {
    const envelope = await this.request(
      'nodeCommandResponse',
      (requestId) => ({ requestId, msg: { $case: 'nodeCommandRequest', nodeCommandRequest: request } }),
      options,
      `command ${request.command}`,
    );
    if (envelope.msg?.$case !== 'nodeCommandResponse')
      throw new Error('response kind checked by the dispatcher');
    return envelope.msg.nodeCommandResponse;
  }

  async refreshConfig(
    payload: NodeConfigPayload,
    options: RequestOptions = {},
  ): Promise<NodeConfigRefreshResult> {
    const envelope = await this.request(
      'nodeConfigRefreshResult',
      (requestId) => ({
        requestId,
        msg: { $case: 'nodeConfigRefreshRequest', nodeConfigRefreshRequest: { config: payload } },
      }),
      options,
      'config refresh',
    );
    if (envelope.msg?.$case !== 'nodeConfigRefreshResult')
      throw new Error('response kind checked by the dispatcher');
    const result = envelope.msg.nodeConfigRefreshResult;
    if (result.ok) this.currentPayload = payload;
    return result;
  }

  async sendHeartbeatPing(seq: number): Promise<void> {
    await this.send({
      requestId: '',
      msg: { $case: 'heartbeatPing', heartbeatPing: { seq, sentAtUnixMs: this.clock.now() } },
    });
  }

  /**
   * Dispatches one frame received after the handshake. Unknown or unexpected frames are logged and ignored
   * (a newer peer may send kinds we do not know); the connection stays up.
   */
  handle(envelope: Envelope): void {
    const now = this.clock.now();
    this.lastSeenUnixMs = now;
    const msg = envelope.msg;
    if (!msg) {
      this.logger.warn({ nodeId: this.nodeId }, 'ignoring a frame without a message');
      return;
    }
    switch (msg.$case) {
      case 'heartbeatPing':
        this.lastHeartbeatUnixMs = now;
        this.send({
          requestId: envelope.requestId,
          msg: { $case: 'heartbeatPong', heartbeatPong: { seq: msg.heartbeatPing.seq, sentAtUnixMs: now } },
        }).catch((error: unknown) =>
          this.logger.debug({ nodeId: this.nodeId, error: String(error) }, 'pong not sent'),
        );
        return;
      case 'heartbeatPong':
        this.lastHeartbeatUnixMs = now;
        return;
      case 'runEvent':
        this.routeRunEvent(envelope);
        return;
      case 'nodeCommandResponse':
      case 'nodeConfigRefreshResult':
        this.settle(envelope.requestId, msg.$case, envelope);
        return;
      case 'providerLifecycleProgress': {
        const pending = this.pending.get(envelope.requestId);
        pending?.onProgress?.(msg.providerLifecycleProgress);
        return;
      }
      case 'providerStatusReport':
        this.applyStatusReport(msg.providerStatusReport);
        return;
      case 'nodeDiscovery':
        this.discoveredState = fromWireDiscovery(msg.nodeDiscovery);
        this.logger.info(
          {
            nodeId: this.nodeId,
            backends: this.discoveredState.backends.map((backend) => backend.kind),
            clis: this.discoveredState.clis.map((cli) => cli.name),
          },
          'node discovery report',
        );
        try {
          this.discoveryListener?.(this.discoveredState);
        } catch (error) {
          this.logger.error({ nodeId: this.nodeId, error: String(error) }, 'discovery listener failed');
        }
        return;
      case 'modelCallOpen':
        this.modelCalls.open(msg.modelCallOpen.callId, msg.modelCallOpen.parentRunId);
        return;
      case 'modelCallData':
        this.modelCalls.data(msg.modelCallData.callId, msg.modelCallData.data);
        return;
      case 'modelCallClose':
        this.modelCalls.close(msg.modelCallClose.callId, msg.modelCallClose.reason);
        return;
      case 'goodbye':
        this.logger.info(
          { nodeId: this.nodeId, reason: msg.goodbye.reason, detail: msg.goodbye.detail },
          'node said goodbye',
        );
        return;
      case 'registerRequest':
      case 'registerResponse':
      case 'registerChallenge':
      case 'registerProof':
      case 'runRequest':
      case 'cancelRequest':
      case 'nodeCommandRequest':
      case 'nodeConfigRefreshRequest':
        this.logger.warn(
          { nodeId: this.nodeId, kind: msg.$case },
          'ignoring a frame the edge does not accept from a node',
        );
        return;
      default: {
        const unreachable: never = msg;
        this.logger.warn({ nodeId: this.nodeId, frame: String(unreachable) }, 'ignoring an unknown frame');
      }
    }
  }

  /** Closes the connection (optionally with a Goodbye) and ends everything that waits on it. */
  async close(reason: string, options: { goodbye?: boolean; detail?: string } = {}): Promise<void> {
    this.markClosed(reason);
    await this.channel.close(reason, options);
  }

  /** Called once when the connection is gone; later calls are ignored. */
  markClosed(reason: string): void {
    if (this.closeReason !== undefined) return;
    this.closeReason = reason;
    const error = new NodeLinkError('link_closed', `node ${this.nodeId} disconnected (${reason})`);
    for (const [requestId, pending] of [...this.pending]) {
      this.pending.delete(requestId);
      pending.reject(error);
    }
    this.modelCalls.closeAll();
    const observers = [...this.runs.values()];
    this.runs.clear();
    for (const observer of observers) {
      try {
        observer.onLinkClosed(reason);
      } catch (caught) {
        this.logger.error(
          { nodeId: this.nodeId, error: String(caught) },
          'run observer failed on disconnect',
        );
      }
    }
    for (const listener of this.closeListeners.splice(0)) listener(reason);
  }

  onClosed(listener: (reason: string) => void): void {
    if (this.closeReason !== undefined) listener(this.closeReason);
    else this.closeListeners.push(listener);
  }

  private routeRunEvent(envelope: Envelope): void {
    if (envelope.msg?.$case !== 'runEvent') return;
    const event = fromWireRunEvent(envelope.msg.runEvent);
    if (!event) {
      this.logger.warn(
        { nodeId: this.nodeId, runId: envelope.msg.runEvent.runId },
        'ignoring a run event without a body',
      );
      return;
    }
    const observer = this.runs.get(event.runId);
    if (!observer) {
      this.logger.debug(
        { nodeId: this.nodeId, runId: event.runId, type: event.part.type },
        'event for a run not tracked',
      );
      return;
    }
    if (isTerminalPart(event.part)) this.runs.delete(event.runId);
    try {
      observer.onEvent(event);
    } catch (error) {
      this.logger.error(
        { nodeId: this.nodeId, runId: event.runId, error: String(error) },
        'run observer failed',
      );
    }
  }

  private applyStatusReport(report: ProviderStatusReport): void {
    this.providerHealth = report.providers.map((entry) => ({
      providerId: entry.providerId,
      health: healthName(entry.health),
      detail: entry.detail,
      cause: entry.cause,
      checkedAtUnixMs: entry.checkedAtUnixMs,
      ...residentOf(entry),
    }));
  }

  private request(
    kind: PendingRequest['kind'],
    build: (requestId: string) => Envelope,
    options: RequestOptions,
    label: string,
  ): Promise<Envelope> {
    this.assertOpen();
    if (options.signal?.aborted) {
      return Promise.reject(new NodeLinkError('request_aborted', `${label} aborted before it was sent`));
    }
    const requestId = `e${this.nextRequestId++}`;
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    return new Promise<Envelope>((resolve, reject) => {
      const cleanup = () => {
        this.clock.clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.pending.delete(requestId);
      };
      const timer = this.clock.setTimeout(() => {
        cleanup();
        reject(
          new NodeLinkError(
            'request_timeout',
            `${label} on node ${this.nodeId} timed out after ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const onAbort = () => {
        cleanup();
        reject(new NodeLinkError('request_aborted', `${label} on node ${this.nodeId} was aborted`));
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(requestId, {
        kind,
        onProgress: options.onProgress,
        resolve: (envelope) => {
          cleanup();
          resolve(envelope);
        },
        reject: (error) => {
          cleanup();
          reject(error);
        },
      });
      this.send(build(requestId)).catch((error: unknown) => {
        const pending = this.pending.get(requestId);
        pending?.reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  private settle(requestId: string, kind: PendingRequest['kind'], envelope: Envelope): void {
    const pending = this.pending.get(requestId);
    if (!pending) {
      this.logger.debug(
        { nodeId: this.nodeId, requestId, kind },
        'response for no pending request (late or unknown)',
      );
      return;
    }
    if (pending.kind !== kind) {
      pending.reject(
        new NodeLinkError('send_failed', `node ${this.nodeId} answered ${pending.kind} with ${kind}`),
      );
      return;
    }
    pending.resolve(envelope);
  }

  /** Rejects with link_closed when the link is closed, with send_failed when the channel fails the frame. */
  private send(envelope: Envelope): Promise<void> {
    if (this.closeReason !== undefined) return Promise.reject(this.closedError());
    let sent: Promise<void>;
    try {
      sent = this.channel.send(envelope);
    } catch (error) {
      return Promise.reject(this.sendFailed(error));
    }
    return sent.catch((error: unknown) => {
      throw this.sendFailed(error);
    });
  }

  private sendFailed(error: unknown): NodeLinkError {
    return new NodeLinkError('send_failed', `cannot send to node ${this.nodeId}: ${errorMessage(error)}`, {
      cause: error,
    });
  }

  private assertOpen(): void {
    if (this.closeReason !== undefined) throw this.closedError();
  }

  private closedError(): NodeLinkError {
    return new NodeLinkError('link_closed', `node ${this.nodeId} is disconnected (${this.closeReason})`);
  }
}

/** The entry's resident list as the summary keeps it; nothing when the node did not report one (unknown). */
function residentOf(entry: ProviderHealthEntry): Pick<ProviderHealthSummary, 'resident'> {
  switch (entry.residentState) {
    case ResidentState.RESIDENT_STATE_FRESH:
      return { resident: { models: [...entry.residentModels], state: 'fresh' } };
    case ResidentState.RESIDENT_STATE_STALE:
      return { resident: { models: [...entry.residentModels], state: 'stale' } };
    case ResidentState.RESIDENT_STATE_UNSPECIFIED:
    case ResidentState.UNRECOGNIZED:
      return {};
    default: {
      const unknownValue: never = entry.residentState;
      void unknownValue;
      return {};
    }
  }
}

function healthName(health: ProviderHealth): ProviderHealthSummary['health'] {
  switch (health) {
    case ProviderHealth.PROVIDER_HEALTH_HEALTHY:
      return 'healthy';
    case ProviderHealth.PROVIDER_HEALTH_UNHEALTHY:
      return 'unhealthy';
    case ProviderHealth.PROVIDER_HEALTH_UNREACHABLE:
      return 'unreachable';
    case ProviderHealth.PROVIDER_HEALTH_UNSPECIFIED:
    case ProviderHealth.UNRECOGNIZED:
      return 'unknown';
    default: {
      const unknownValue: never = health;
      void unknownValue;
      return 'unknown';
    }
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
