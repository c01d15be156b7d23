// Tracks one run from submit to its terminal event: receives the node's events (as the link's RunObserver),
// publishes each on the event bus, feeds the handle's stream, and releases everything exactly once when the run
// ends — whichever comes first of: the node's terminal event, the node disconnecting (→ `error` part
// `node_disconnected`), the edge deadline (→ `error` part `run_timeout`), a cancel the node never confirms
// (→ `cancelled` after a grace period) or a stuck foreground consumer (→ `error` part `consumer_overflow`).
import {
  isTerminalPart,
  type RunEventEnvelope,
  type RunEventPart,
  type RunRequest,
  type Usage,
} from '@iop/wire';
import type { Clock, ClockTimer } from '../clock.js';
import type { EventBus, RunAdmitted } from '../events/types.js';
import type { Logger } from '../logging.js';
import type { NodeLink, RunObserver } from '../node/node-link.js';
import { unwatchAbort, watchAbort } from './abort-watchers.js';
import { RunEventStream } from './run-event-stream.js';
import type { RunEventWithMeta, RunHandle, RunOutcome } from './types.js';

export interface RunTrackerOptions {
  request: RunRequest;
  link: NodeLink;
  events: EventBus;
  logger: Logger;
  clock: Clock;
  bufferSize: number;
  /** Edge-side deadline (ms after submit); undefined = none. */
  deadlineMs: number | undefined;
  /** How long to wait for the node to confirm a cancel before ending the run locally. */
  cancelGraceMs: number;
  signal?: AbortSignal | undefined;
  /** Milliseconds the run waited for capacity before it was sent. */
  queueMs: number;
  /** How the service admitted the run; attached to its first event on the bus. */
  admitted?: RunAdmitted;
  /** Called once when the run has ended (its terminal part is published): release capacity and session here. */
  onFinished: (tracker: RunTracker) => void;
}

export class RunTracker implements RunObserver {
  readonly runId: string;
  readonly nodeId: string;
  readonly stream: RunEventStream;
  readonly done: Promise<RunOutcome>;
  private readonly options: RunTrackerOptions;
  private resolveDone!: (outcome: RunOutcome) => void;
  /** Submit and finish on the clock's monotonic scale (see durationNow): the overhead figure subtracts them. */
  private readonly submittedAt: number;
  /** performance.now() at submit, for surfaces' overhead figures. */
  private readonly submittedAtMonotonic = performance.now();
  private finishedAt: number | undefined;
  private backendMs: number | undefined;
  private lastSeq = 0;
  /** The newest usage the node reported (each usage part is the run's total so far). */
  private lastUsage: Usage | undefined;
  private finalOutcome: RunOutcome | undefined;
  private finished = false;
  private admittedPublished = false;
  private cancelRequested = false;
  private deadlineTimer: ClockTimer | undefined;
  private cancelTimer: ClockTimer | undefined;
  private readonly onAbort = () => {
    void this.cancel('client-disconnected');
  };

  constructor(options: RunTrackerOptions) {
    this.options = options;
    this.runId = options.request.runId;
    this.nodeId = options.link.nodeId;
    this.submittedAt = this.durationNow();
    this.stream = new RunEventStream(options.bufferSize, options.request.background);
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  get isFinished(): boolean {
    return this.finished;
  }

  /** Arms the deadline and the abort signal; call once the run request was sent. */
  arm(): void {
    if (this.finished) return;
    if (this.options.deadlineMs !== undefined) {
      const deadline = this.options.deadlineMs;
      this.deadlineTimer = this.options.clock.setTimeout(() => {
        this.deadlineTimer = undefined;
        this.sendCancel('deadline');
        this.finishLocally({
          type: 'error',
          code: 'run_timeout',
          message: `run ${this.runId} exceeded its ${deadline} ms deadline`,
          retryable: true,
          backendMs: 0,
        });
      }, deadline);
    }
    const signal = this.options.signal;
    if (signal) {
      if (signal.aborted) this.onAbort();
      else watchAbort(signal, this.onAbort);
    }
  }

  handle(): RunHandle {
    return new TrackedRunHandle(this, this.options.request, this.options.queueMs, this.submittedAtMonotonic);
  }

  /** Tokens the backend reported for the run (0 when it reported none). */
  get usage(): { inputTokens: number; outputTokens: number } {
    return {
      inputTokens: this.lastUsage?.promptTokens ?? 0,
      outputTokens: this.lastUsage?.completionTokens ?? 0,
    };
  }

  /** How the run ended; undefined until it has. */
  get outcome(): RunOutcome | undefined {
    return this.finalOutcome;
  }

  /** Milliseconds from submit to the end (so far, while running). */
  get durationMs(): number {
    return (this.finishedAt ?? this.durationNow()) - this.submittedAt;
  }

  /** The clock's monotonic reading when it has one (sub-millisecond), else its epoch milliseconds. */
  private durationNow(): number {
    const clock = this.options.clock;
    return clock.monotonicNow ? clock.monotonicNow() : clock.now();
  }

  overheadMs(): number | undefined {
    if (this.finishedAt === undefined || this.backendMs === undefined) return undefined;
    return Math.max(0, this.finishedAt - this.submittedAt - this.backendMs);
  }

  /** Sends CANCEL_RUN once; if the node does not end the run within the grace period, ends it here. */
  cancel(reason = 'cancelled'): Promise<void> {
    if (this.finished || this.cancelRequested) return Promise.resolve();
    this.cancelRequested = true;
    this.sendCancel(reason);
    this.cancelTimer = this.options.clock.setTimeout(() => {
      this.cancelTimer = undefined;
      this.options.logger.warn(
        { runId: this.runId, nodeId: this.nodeId },
        'node did not confirm cancel; ending run',
      );
      this.finishLocally({ type: 'cancelled', reason });
    }, this.options.cancelGraceMs);
    return Promise.resolve();
  }

  onEvent(event: RunEventEnvelope): void {
    if (this.finished) return;
    this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (event.part.type === 'usage') this.lastUsage = event.part.usage;
    const meta: RunEventWithMeta = {
      runId: this.runId,
      nodeId: this.nodeId,
      seq: event.seq,
      atUnixMs: event.atUnixMs,
      part: event.part,
    };
    if (isTerminalPart(event.part)) {
      if (event.part.type !== 'cancelled') this.backendMs = event.part.backendMs;
      this.finish(meta);
      return;
    }
    this.options.events.publish({ type: 'run', event: this.forBus(meta) });
    if (this.stream.push(meta) === 'overflow') {
      this.sendCancel('consumer-overflow');
      this.finishLocally({
        type: 'error',
        code: 'consumer_overflow',
        message: `run ${this.runId}: the reader fell more than ${this.options.bufferSize} events behind`,
        retryable: false,
        backendMs: 0,
      });
    }
  }

  onLinkClosed(reason: string): void {
    this.finishLocally({
      type: 'error',
      code: 'node_disconnected',
      message: `node ${this.nodeId} disconnected (${reason})`,
      retryable: true,
      backendMs: 0,
    });
  }

  /** Ends the run with an edge-made terminal part (the node never sent one). */
  finishLocally(part: Extract<RunEventPart, { type: 'error' | 'cancelled' }>): void {
    if (this.finished) return;
    this.lastSeq += 1;
    this.finish({
      runId: this.runId,
      nodeId: this.nodeId,
      seq: this.lastSeq,
      atUnixMs: this.options.clock.now(),
      part,
    });
  }

  private finish(terminal: RunEventWithMeta): void {
    if (this.finished) return;
    this.finished = true;
    this.finishedAt = this.durationNow();
    if (this.deadlineTimer !== undefined) this.options.clock.clearTimeout(this.deadlineTimer);
    if (this.cancelTimer !== undefined) this.options.clock.clearTimeout(this.cancelTimer);
    this.deadlineTimer = undefined;
    this.cancelTimer = undefined;
    if (this.options.signal) unwatchAbort(this.options.signal, this.onAbort);
    this.options.link.releaseRun(this.runId);
    this.options.events.publish({ type: 'run', event: this.forBus(terminal) });
    this.stream.end(terminal);
    this.finalOutcome = outcomeOf(terminal.part);
    this.resolveDone(this.finalOutcome);
    this.options.onFinished(this);
  }

  /** The event as the bus carries it: the run's first one also says how the run was admitted. */
  private forBus(event: RunEventWithMeta): RunEventWithMeta {
    if (this.admittedPublished || !this.options.admitted) return event;
    this.admittedPublished = true;
    // Named fields: one object (a spread plus the extra field also allocates a property store for it).
    return {
      runId: event.runId,
      nodeId: event.nodeId,
      seq: event.seq,
      atUnixMs: event.atUnixMs,
      part: event.part,
      admitted: this.options.admitted,
    };
  }

  private sendCancel(reason: string): void {
    const { link, request, logger } = this.options;
    if (link.closed) return;
    link
      .cancelRun(
        { runId: this.runId, adapter: request.adapter, target: request.target, sessionId: request.sessionId },
        reason,
      )
      .catch((error: unknown) => {
        logger.warn({ runId: this.runId, nodeId: this.nodeId, error: String(error) }, 'cancel not sent');
      });
  }
}

/** A tracker's RunHandle: its methods live on the prototype (no two closures per run). */
class TrackedRunHandle implements RunHandle {
  readonly runId: string;
  readonly nodeId: string;
  readonly adapter: string;
  readonly target: string;
  readonly sessionId: string;
  readonly providerId: string | undefined;
  readonly events: RunEventStream;
  readonly done: Promise<RunOutcome>;
  readonly #tracker: RunTracker;

  constructor(
    tracker: RunTracker,
    request: RunRequest,
    readonly queueMs: number,
    readonly submittedAt: number,
  ) {
    this.#tracker = tracker;
    this.runId = tracker.runId;
    this.nodeId = tracker.nodeId;
    this.adapter = request.adapter;
    this.target = request.target;
    this.sessionId = request.sessionId;
    this.providerId = request.providerId === '' ? undefined : request.providerId;
    this.events = tracker.stream;
    this.done = tracker.done;
  }

  cancel(reason?: string): Promise<void> {
    return this.#tracker.cancel(reason);
  }

  overheadMs(): number | undefined {
    return this.#tracker.overheadMs();
  }
}

export function outcomeOf(part: RunEventPart): RunOutcome {
  switch (part.type) {
    case 'complete':
      return { status: 'completed', detail: part.detail, finishReason: part.finishReason };
    case 'error':
      return { status: 'error', code: part.code, message: part.message };
    case 'cancelled':
      return { status: 'cancelled', reason: part.reason };
    case 'start':
    case 'text-delta':
    case 'reasoning-delta':
    case 'tool-call':
    case 'usage':
    case 'progress':
    case 'embeddings':
      throw new Error(`not a terminal part: ${part.type}`);
    default: {
      const unreachable: never = part;
      throw new Error(`unknown run event part ${JSON.stringify(unreachable)}`);
    }
  }
}
