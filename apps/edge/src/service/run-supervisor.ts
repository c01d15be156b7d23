// The run supervisor: one object per run, the one place that answers "when does this run end". It takes the key's
// limits (the governor's admission, reserved on the key's home edge in cluster mode), asks placement where the
// run executes and takes capacity there (pool lease and session slot here; nothing here for a forwarded run),
// sends it, feeds its events to the run's handle (and, for runs executing here, to the event bus), and ends it
// exactly once, then releases everything it holds exactly once: reservation (pool lease, session slot, the node
// link's registration or the fabric's forward), the limit admission (corrected to the tokens the backend
// reported, with the usage record) and the span. Nothing else in the edge keeps a deadline or a cancel grace.
//
// A run ends on the first of: its terminal part (from the node, or the owner edge of a forwarded run), the place
// it executes being lost (node disconnected, owner edge gone, fabric leaving), the one deadline (the run's
// timeoutMs plus deadlineGraceMs, plus the reservation's slack for a forwarded run), a cancel the executor does
// not confirm within cancelGraceMs, or a foreground reader falling more than the buffer behind. Refused before
// dispatch (limits, capacity, node gone, caller gone), it throws a ServiceError instead and holds nothing.
//
// Retry before the first byte (retry-policy.ts): a models[] run executing here that fails before any output
// (backend unreachable, 5xx/429, broken connection, node busy or lost) is placed again — its reservation
// released, the failed provider excluded for the rest of the run — up to maxAttempts dispatches in all, within
// the same deadline. Nothing of the failed attempt reaches the caller or the bus; the run's handle reports the
// provider of the latest attempt and how many were made. Once output started, a failure ends the run as before.
// The outcome of each attempt (success: output or completion; failure: a dispatch failure) goes to the
// provider's circuit. A forwarded run is retried by its owner edge's supervisor, not here.
//
// Child runs (an agent's model calls; agent-contract/inner/agent-runs.md): a child's supervisor is made with its
// parent's (a live run executing here, on the node that carried the call). It runs as the parent's principal
// (rpm, tpm and the budget count it; max_concurrent does not), waits ahead of the model's other runs and takes no
// node max_concurrency slot (the pool), continues the parent's trace, always executes on this edge, and tells the
// parent its tokens when it ends. The parent's end, however it comes, cancels its live children (CANCEL_RUN for
// those running, leaving the queue for those waiting); so does a retry of the parent (its agent process is gone).
//
// Hot path: one event object per node event (built by the placement), one state check; no timer unless the run
// has a deadline or is being cancelled, no closure per run beyond the abort listener.
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import type { TraceSpan, Tracing } from '@iop/tracing';
import type { Clock, ClockTimer } from '../clock.js';
import type { EventBus, RunAdmitted } from '../events/types.js';
import { isGovernanceError } from '../governance/errors.js';
import type { Admission, Governor, RunEnd, RunUsage } from '../governance/governor.js';
import { allowsModel, hasLimits, type Principal } from '../governance/principal.js';
import type { SharedLimits } from '../governance/shared-limits.js';
import type { Logger } from '../logging.js';
import { affinityKeyFor } from '../placement/affinity-key.js';
import { isPlacementError } from '../placement/errors.js';
import type {
  Dispatched,
  ExecutionLossCode,
  ExecutionObserver,
  Placement,
  PlacementRequest,
  Reservation,
} from '../placement/placement.js';
import type { DispatchFailureReason, ProviderOutcomes } from '../placement/outcomes.js';
import { unwatchAbort, watchAbort } from '../abort-watchers.js';
import { ServiceError } from './errors.js';
import { fromGovernanceError, fromPlacementError } from './run-errors.js';
import { DeliveredUsage } from './delivered-usage.js';
import { estimationMessages } from './estimation-messages.js';
import { RunEventStream } from './run-event-stream.js';
import { failureOfError, failureOfPart, isOutput } from './retry-policy.js';
import type {
  AgentRunView,
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunOutcome,
  RunSpec,
  RunSurface,
  SubmitOptions,
} from './types.js';

/**
 * Where a run is in its life. Each state is entered once at most (except `queued`, see `admitted`), in this
 * order; `RUN_TRANSITIONS` lists the legal moves and any other throws RunStateError.
 */
export type RunState =
  /** Submitted: the key's limits are being checked and taken, then capacity is awaited in the pool's queue. */
  | 'queued'
  /**
   * Capacity is held where the run will execute (a pool lease and session here, or the choice of an owner edge,
   * which admits it exactly itself).
   */
  | 'admitted'
  /**
   * The run request is being sent, or was sent and no event has come back yet. Back to `queued` when the owner
   * edge never took a forwarded run (unreachable before the first byte: it is then admitted here), or when the
   * attempt failed before any output and the run is placed again on another provider (a retry).
   */
  | 'dispatched'
  /**
   * Events are arriving from where the run executes. Back to `queued` only for a retry: the attempt ended with a
   * dispatch failure (or its node was lost) after metadata (`start`, `usage`) but before any output.
   */
  | 'streaming'
  /** A cancel was sent (caller, client gone, cancelRun); the executor's end is awaited for cancelGraceMs. */
  | 'ending'
  /** Ended: the terminal part was delivered (or the run was refused) and everything held was released. */
  | 'ended';

export const RUN_TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = {
  queued: ['admitted', 'ended'],
  admitted: ['dispatched', 'ended'],
  dispatched: ['streaming', 'ending', 'queued', 'ended'],
  streaming: ['ending', 'queued', 'ended'],
  ending: ['ended'],
  ended: [],
};

/** Throws RunStateError unless `from → to` is in RUN_TRANSITIONS. */
export function assertTransition(runId: string, from: RunState, to: RunState): void {
  if (!RUN_TRANSITIONS[from].includes(to)) throw new RunStateError(runId, from, to);
}

/** An illegal state transition: a bug in the supervisor or its caller, never the client's fault. */
export class RunStateError extends Error {
  override readonly name = 'RunStateError';
  readonly code = 'illegal_transition';
  readonly fault = 'bug';

  constructor(
    readonly runId: string,
    readonly from: RunState,
    readonly to: RunState,
  ) {
    super(`run ${runId}: illegal transition ${from} → ${to}`);
  }
}

/** What admission reports to metrics (the runtime passes the shared EdgeMetrics; tests a recorder). */
export interface AdmissionMetrics {
  /** A run was admitted and sent from this edge's pool; `providerId` is undefined for unmatched routes. */
  dispatched(surface: RunSurface, providerId: string | undefined, nodeId: string): void;
  /** Admission refused a run for lack of capacity. */
  rejected(surface: RunSurface, model: string, reason: 'queue_full' | 'queue_timeout' | 'no_provider'): void;
  /** A run that failed before its first output is placed again (iop_run_retries_total{reason}). */
  retried(surface: RunSurface, reason: DispatchFailureReason): void;
  /** A child run ended (iop_child_runs_total{result}); `rejected` = refused before it started. */
  childEnded?(result: ChildRunResult): void;
  /**
   * A child run was dispatched after waiting `seconds` for capacity of `model`, every attempt's wait together
   * (iop_child_queue_wait_seconds{model}).
   */
  childQueued?(model: string, seconds: number): void;
}

/** How a child run ended, for metrics. */
export type ChildRunResult = 'completed' | 'error' | 'cancelled' | 'rejected';

export const noAdmissionMetrics: AdmissionMetrics = {
  dispatched: () => undefined,
  rejected: () => undefined,
  retried: () => undefined,
};

/** What every supervisor of one service shares (built once by the service). */
export interface SupervisorContext {
  placement: Placement;
  events: EventBus;
  logger: Logger;
  clock: Clock;
  metrics: AdmissionMetrics;
  tracing: Tracing;
  governor: Governor | undefined;
  /**
   * Tokens a run reserves against tpm and budgets: its prompt plus its answer's limit (admission-tokens.ts), under
   * the model's policy the run was resolved with (none for a route).
   */
  reservedTokens(spec: RunSpec, model: PlacementRequest['modelPolicy']): number;
  /** Cluster mode: a key's limits counted on its home edge; undefined on a single edge. */
  sharedLimits: SharedLimits | undefined;
  bufferSize: number;
  deadlineGraceMs: number;
  cancelGraceMs: number;
  /**
   * Dispatches a run may take in all (1 = no retry), under the policy of its current attempt; read when a retry
   * is considered.
   */
  maxAttempts(request: PlacementRequest): number;
  /** Where each attempt's outcome goes (the providers' circuits); none = not recorded. */
  outcomes: ProviderOutcomes | undefined;
  /** True once the service refuses new work (checked again after the queue wait). */
  shuttingDown(): boolean;
  /** The run was dispatched: the service can find it by id from now on (false = the id is taken). */
  register(run: RunSupervisor): boolean;
  /** The run ended (called once, after everything was released). */
  unregister(run: RunSupervisor): void;
  /** Told every state a run enters (tests, diagnostics); none = nothing is called. */
  onState?: ((run: RunSupervisor, state: RunState) => void) | undefined;
}

export class RunSupervisor implements ExecutionObserver {
  readonly stream: RunEventStream;
  readonly done: Promise<RunOutcome>;
  private stateNow: RunState = 'queued';
  private resolveDone!: (outcome: RunOutcome) => void;
  /** The current attempt's request: replaced (never mutated) when the principal gains its lease or a retry begins. */
  private request: PlacementRequest;
  private reservation: Reservation | undefined;
  private dispatched: Dispatched | undefined;
  private admission: Admission | undefined;
  /** The principal the run is admitted with (carrying its home-edge lease in cluster mode). */
  private principal: Principal | undefined;
  private readonly estimate: number;
  private span: TraceSpan | undefined;
  private deadlineTimer: ClockTimer | undefined;
  private cancelTimer: ClockTimer | undefined;
  /** Submit and end on the clock's monotonic scale (durationNow): durations and the overhead figure. */
  private readonly submittedAt: number;
  /** performance.now() when the run was handed to where it executes (the handle's submittedAt). */
  private sentAt = 0;
  private endedAt: number | undefined;
  private backendMs: number | undefined;
  private lastSeq = 0;
  /** The backend's usage, or an estimate of what was streamed when the run ended before it reported any. */
  private readonly delivered: DeliveredUsage;
  private outcomeNow: RunOutcome | undefined;
  /** The run's end came from where it executes (its terminal part), not from this edge. */
  private endedByExecutor = false;
  private admittedPublished = false;
  /** The run executes on this edge (its events go on this edge's bus); false for a forwarded run. */
  private here = true;
  /** Dispatches made (1 + retries). */
  private attemptsNow = 0;
  /** Providers an earlier attempt failed on: never placed on again. */
  private excluded: Set<string> | undefined;
  /** A part the caller sees as output arrived: no retry from now on. */
  private outputStarted = false;
  /** The current attempt's success went to its provider's circuit. */
  private attemptReported = false;
  /** The handle was returned: a retry from now on happens behind it. */
  private handed = false;
  /** Added to the node's seq of a later attempt, so the caller's seq keeps increasing across attempts. */
  private seqBase = 0;
  /** Queue wait of earlier attempts (the handle reports the total). */
  private earlierQueueMs = 0;
  /** Aborts the pool wait of a retry when the run ends meanwhile (deadline, cancel). */
  private retryWait: AbortController | undefined;
  private readonly onAbort = (): void => {
    void this.cancel('client-disconnected');
  };
  /** A child's own abort: its parent ended (leaves the queue; the request's signal follows it). */
  private readonly childAbort: AbortController | undefined;
  /** A parent's children that have not ended. */
  private children: Set<RunSupervisor> | undefined;
  /** Children submitted so far. */
  private childrenSubmitted = 0;
  /** Tokens of the children that ended. */
  private childInputEnded = 0;
  private childOutputEnded = 0;

  constructor(
    private readonly context: SupervisorContext,
    runId: string,
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
    /** Placed on this edge whatever the fabric looks like (a run another edge forwarded here). */
    private readonly placeHere = false,
    /** A child run's parent: a live run executing here (the service checked it). */
    private readonly parent?: RunSupervisor,
  ) {
    const model = options.model ?? (destination.kind === 'model' ? destination.model : destination.target);
    // The first attempt's model policy and affinity key: resolved here once, read by every layer below.
    const modelPolicy = context.placement.modelPolicy(destination);
    if (parent === undefined) {
      this.request = {
        runId,
        destination,
        spec,
        surface: options.surface,
        model,
        principal: options.principal,
        traceparent: options.traceparent,
        signal: options.signal,
        modelPolicy,
        affinityKey: attemptAffinityKey(spec, options.principal, modelPolicy),
      };
    } else {
      // The parent's principal (without its home-edge lease, which is the parent's own), its trace, and an abort
      // of its own for the parent's end.
      const childAbort = new AbortController();
      this.childAbort = childAbort;
      const principal = parent.admittedAs;
      this.request = {
        runId,
        destination,
        spec,
        surface: options.surface,
        model,
        principal,
        traceparent: parent.span?.traceparent ?? options.traceparent,
        signal: options.signal ? AbortSignal.any([options.signal, childAbort.signal]) : childAbort.signal,
        parentRunId: parent.runId,
        modelPolicy,
        affinityKey: attemptAffinityKey(spec, principal, modelPolicy),
      };
    }
    this.principal = this.request.principal;
    // Reserved once: the home edge's reservation and the governor's admission count the same figure.
    this.estimate = context.governor || context.sharedLimits ? context.reservedTokens(spec, modelPolicy) : 0;
    this.delivered = new DeliveredUsage(estimationMessages(spec));
    this.submittedAt = this.durationNow();
    this.stream = new RunEventStream(context.bufferSize, spec.background ?? false);
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  get runId(): string {
    return this.request.runId;
  }

  get state(): RunState {
    return this.stateNow;
  }

  /** How the run ended; undefined until it has. */
  get outcome(): RunOutcome | undefined {
    return this.outcomeNow;
  }

  /** The principal the run is admitted with (undefined = anonymous), without its home-edge lease (the run's own). */
  get admittedAs(): Principal | undefined {
    return withoutLease(this.principal);
  }

  /**
   * True when a model call carried by `nodeId`'s link may become this run's child: the run executes on this edge,
   * on that node, and is dispatched or streaming (not queued for a retry, not ending); a child has no children.
   */
  acceptsChildrenFrom(nodeId: string): boolean {
    const state = this.stateNow;
    return (
      this.here &&
      this.parent === undefined &&
      (state === 'dispatched' || state === 'streaming') &&
      this.reservation?.edgeId === undefined &&
      this.reservation?.nodeId === nodeId
    );
  }

  /** A child was made for this run (the service calls it right after constructing the child). */
  adopt(child: RunSupervisor): void {
    (this.children ??= new Set()).add(child);
    this.childrenSubmitted += 1;
  }

  /** The run and its children so far (views); undefined when it never had a child. */
  agentView(): AgentRunView | undefined {
    if (this.childrenSubmitted === 0) return undefined;
    const children = this.childUsage();
    const own = this.ownUsage(children);
    return {
      runId: this.runId,
      nodeId: this.reservation?.nodeId ?? this.dispatched?.nodeId ?? '',
      principal: this.principal?.id ?? '',
      model: this.request.model,
      liveChildren: this.children?.size ?? 0,
      children: this.childrenSubmitted,
      tokens: own.inputTokens + own.outputTokens,
      childTokens: children.inputTokens + children.outputTokens,
    };
  }

  /** Its children's tokens so far: the ended ones', and what running ones delivered. */
  private childUsage(): RunUsage {
    let inputTokens = this.childInputEnded;
    let outputTokens = this.childOutputEnded;
    for (const child of this.children ?? []) {
      const usage = child.delivered.usage();
      inputTokens += usage.inputTokens;
      outputTokens += usage.outputTokens;
    }
    return { inputTokens, outputTokens };
  }

  /**
   * What the run is charged for itself: what it delivered, less what its children were charged. An agent's CLI
   * reports the tokens of the model calls it made, and those calls are its children, charged each on its own:
   * counted once, there; what the CLI reported beyond them (calls that went elsewhere) stays the agent run's.
   */
  private ownUsage(children: RunUsage): RunUsage {
    const usage = this.delivered.usage();
    return {
      inputTokens: Math.max(0, usage.inputTokens - children.inputTokens),
      outputTokens: Math.max(0, usage.outputTokens - children.outputTokens),
    };
  }

  /**
   * queued → admitted → dispatched: takes the limits and the capacity and sends the run. Resolves with the run's
   * handle once it is on its way; rejects with a ServiceError (and holds nothing) when it was refused.
   */
  async start(): Promise<RunHandle> {
    const { context, request } = this;
    let queueSpan = context.tracing.enabled
      ? context.tracing.startSpan('iop.edge.admission', {
          parent: request.traceparent,
          kind: 'server',
          attributes: { 'iop.surface': request.surface, 'iop.principal': this.principal?.id ?? '' },
        })
      : undefined;
    let dispatched: Dispatched;
    /** The dispatch error a retry inside start() answered: what the caller hears if no other provider is left. */
    let retried: unknown;
    try {
      // Awaited only when the key's home edge is asked: placement then sees this run's capacity taken before
      // the next submit of the same turn decides (no extra turn of the event loop per run).
      const reserving = this.takeLimits();
      if (reserving) await reserving;
      let edgeId = this.placeHere ? undefined : context.placement.edgeFor(this.placed());
      for (;;) {
        if (edgeId === undefined) this.admitHere();
        const reservation = await context.placement.reserve(this.placed(), edgeId);
        this.reservation = reservation;
        this.here = reservation.edgeId === undefined;
        this.to('admitted');
        queueSpan?.end();
        queueSpan = undefined;
        // The queue wait may have outlived the edge or the caller.
        if (context.shuttingDown()) throw new ServiceError('shutting_down', 'the edge is shutting down');
        if (request.signal?.aborted) throw new ServiceError('aborted', 'the run was aborted while queued');
        if (!context.register(this)) {
          throw new ServiceError('invalid_request', `run id ${this.runId} is already in flight`);
        }
        this.to('dispatched');
        this.attemptsNow += 1;
        this.attemptReported = false;
        this.span = context.tracing.enabled ? this.startRunSpan(reservation) : undefined;
        this.sentAt = performance.now();
        try {
          dispatched = await reservation.dispatch(
            this.placed(),
            this,
            this.span?.traceparent ?? request.traceparent ?? '',
          );
          break;
        } catch (error) {
          const failure = this.stateNow === 'dispatched' ? failureOfError(error) : undefined;
          if (failure && this.here) {
            this.reportFailure(reservation.providerId, failure);
            if (this.mayRetry(reservation.providerId)) {
              // Nothing reached the node: placed again on another provider (the first retry is synchronous).
              this.beginRetry(reservation, failure, error instanceof Error ? error.message : String(error));
              context.unregister(this);
              retried = error;
              continue;
            }
          }
          if (
            !isPlacementError(error) ||
            error.code !== 'owner_unreachable' ||
            this.stateNow !== 'dispatched'
          ) {
            throw error;
          }
          // Nothing ran on the owner edge: admitted here instead (the one retry before the first byte).
          context.logger.warn(
            { runId: this.runId, edgeId: reservation.edgeId, error: error.message },
            'forward failed; admitting here',
          );
          context.unregister(this);
          reservation.release();
          this.reservation = undefined;
          this.span?.end(error.message);
          this.span = undefined;
          this.to('queued');
          edgeId = undefined;
        }
      }
    } catch (error) {
      queueSpan?.end(error instanceof Error ? error.message : String(error));
      // No other provider took the retry: the caller hears why the first one failed (a cancel stays a cancel).
      const nowhere =
        retried !== undefined &&
        isPlacementError(error) &&
        (error.code === 'no_provider_available' ||
          error.code === 'queue_full' ||
          error.code === 'queue_timeout');
      throw this.refuse(nowhere ? retried : error);
    }
    this.dispatched = dispatched;
    this.handed = true;
    if (this.here) context.metrics.dispatched(request.surface, dispatched.providerId, dispatched.nodeId);
    if (this.parent) context.metrics.childQueued?.(request.model, this.queueMs / 1000);
    this.arm();
    context.logger.debug(
      {
        runId: this.runId,
        nodeId: dispatched.nodeId,
        edgeId: this.reservation?.edgeId,
        surface: request.surface,
        provider: dispatched.providerId,
        adapter: dispatched.adapter,
        target: dispatched.target,
        queueMs: dispatched.queueMs,
        background: request.spec.background ?? false,
      },
      'run submitted',
    );
    return new SupervisedRunHandle(this, this.sentAt);
  }

  /** Dispatches made so far (1 + retries); the `x-iop-attempts` header. */
  get attempts(): number {
    return this.attemptsNow;
  }

  /** Where the latest attempt runs (what the handle reports). */
  get where(): Dispatched {
    return this.dispatched as Dispatched;
  }

  /** Queue wait of every attempt so far. */
  get queueMs(): number {
    return this.earlierQueueMs + (this.dispatched?.queueMs ?? 0);
  }

  /** Cancels the run (idempotent): the executor is asked to stop; unconfirmed after the grace, it ends here. */
  cancel(reason = 'cancelled'): Promise<void> {
    // Behind the handle, waiting for the capacity of a retry: nothing runs anywhere, so it ends here at once.
    if (this.handed && (this.stateNow === 'queued' || this.stateNow === 'admitted')) {
      this.endHere({ type: 'cancelled', reason });
      return Promise.resolve();
    }
    if (this.stateNow !== 'dispatched' && this.stateNow !== 'streaming') return Promise.resolve();
    this.to('ending');
    this.reservation?.cancel(reason);
    // A cancel that could not be sent may have ended the run already.
    if ((this.stateNow as RunState) !== 'ending') return Promise.resolve();
    this.cancelTimer = this.context.clock.setTimeout(() => {
      this.cancelTimer = undefined;
      this.context.logger.warn(
        { runId: this.runId, nodeId: this.dispatched?.nodeId ?? this.reservation?.nodeId },
        'the run did not confirm its cancel; ending it',
      );
      this.endHere({ type: 'cancelled', reason });
    }, this.context.cancelGraceMs);
    return Promise.resolve();
  }

  onEvent(received: RunEventWithMeta): void {
    const state = this.stateNow;
    if (state === 'ended' || state === 'queued' || state === 'admitted') return;
    const event = this.seqBase === 0 ? received : { ...received, seq: received.seq + this.seqBase };
    const part = event.part;
    if (!this.outputStarted) {
      if (part.type === 'error' && this.here) {
        const failure = failureOfPart(part);
        if (failure) {
          const providerId = this.reservation?.providerId ?? this.dispatched?.providerId;
          this.reportFailure(providerId, failure);
          if (state !== 'ending' && this.handed && this.mayRetry(providerId)) {
            this.retryBehindHandle(failure, part);
            return;
          }
        }
      } else if (isOutput(part) || part.type === 'complete') {
        this.outputStarted = isOutput(part);
        this.reportSuccess();
      }
    }
    // After the retry check: a failed attempt's terminal part takes no seq of the caller's stream.
    if (event.seq > this.lastSeq) this.lastSeq = event.seq;
    this.delivered.observe(part);
    if (isTerminalPart(part)) {
      if (part.type !== 'cancelled') this.backendMs = part.backendMs;
      this.endedByExecutor = true;
      this.end(event);
      return;
    }
    if (state === 'dispatched') this.to('streaming');
    if (this.here) this.context.events.publish({ type: 'run', event: this.forBus(event) });
    if (this.stream.push(event) === 'overflow') {
      this.reservation?.cancel('consumer-overflow');
      this.endHere({
        type: 'error',
        code: 'consumer_overflow',
        message: `run ${this.runId}: the reader fell more than ${this.context.bufferSize} events behind`,
        retryable: false,
        backendMs: 0,
      });
    }
  }

  onLost(code: ExecutionLossCode, message: string): void {
    const part = { type: 'error', code, message, retryable: true, backendMs: 0 } as const;
    const state = this.stateNow;
    if (code === 'node_disconnected' && this.here && !this.outputStarted && state !== 'ended') {
      const providerId = this.reservation?.providerId ?? this.dispatched?.providerId;
      this.reportFailure(providerId, 'node_lost');
      if (state !== 'ending' && this.handed && this.mayRetry(providerId)) {
        this.retryBehindHandle('node_lost', part);
        return;
      }
    }
    this.endHere(part);
  }

  /** Milliseconds from submit to the end (so far, while running). */
  get durationMs(): number {
    return (this.endedAt ?? this.durationNow()) - this.submittedAt;
  }

  overheadMs(): number | undefined {
    if (this.endedAt === undefined || this.backendMs === undefined) return undefined;
    return Math.max(0, this.endedAt - this.submittedAt - this.backendMs);
  }

  /** The current attempt's request, with the principal's home-edge lease once it has one (copied once, then kept). */
  private placed(): PlacementRequest {
    const request = this.request;
    if (request.principal === this.principal) return request;
    this.request = { ...request, principal: this.principal };
    return this.request;
  }

  /**
   * True when the run may be placed again after a dispatch failure on `providerId`: a models[] run executing
   * here, nothing delivered yet, attempts left, the edge not shutting down.
   */
  private mayRetry(providerId: string | undefined): boolean {
    if (!this.here || this.outputStarted || providerId === undefined) return false;
    const destination = this.request.destination;
    if (destination.kind !== 'model' || this.context.shuttingDown()) return false;
    return this.attemptsNow < this.context.maxAttempts(this.request);
  }

  private reportFailure(providerId: string | undefined, failure: DispatchFailureReason): void {
    if (providerId === undefined || !this.here || this.attemptReported) return;
    this.attemptReported = true;
    this.context.outcomes?.failed(providerId, failure);
  }

  private reportSuccess(): void {
    if (this.attemptReported || !this.here) return;
    this.attemptReported = true;
    const providerId = this.reservation?.providerId ?? this.dispatched?.providerId;
    if (providerId !== undefined) this.context.outcomes?.succeeded(providerId);
  }

  /**
   * The next attempt's request: the failed providers excluded, and the model's policy resolved again (a live
   * refresh may have changed the model since the last attempt started); the affinity key is recomputed only when
   * the policy did change (the pool's entry is one object until a refresh).
   */
  private resolveRetry(): void {
    const request = this.placed();
    const modelPolicy = this.context.placement.modelPolicy(request.destination);
    const affinityKey =
      modelPolicy === request.modelPolicy
        ? request.affinityKey
        : attemptAffinityKey(request.spec, request.principal, modelPolicy);
    this.request = { ...request, modelPolicy, affinityKey, excludeProviders: this.excluded };
  }

  /**
   * The failed attempt's end (dispatched | streaming → queued): its reservation released, its provider excluded
   * from now on, its span ended, the retry counted. Nothing of it reaches the caller or the bus.
   */
  private beginRetry(reservation: Reservation, failure: DispatchFailureReason, message: string): void {
    const { context } = this;
    const providerId = reservation.providerId;
    context.logger.info(
      {
        runId: this.runId,
        provider: providerId,
        node: reservation.nodeId,
        reason: failure,
        attempt: this.attemptsNow,
        error: message,
      },
      'run failed before its first output; placing it on another provider',
    );
    context.metrics.retried(this.request.surface, failure);
    this.to('queued');
    // The agent process that made them is gone with the failed attempt.
    if (this.children) this.endChildren(`parent run ${this.runId} failed on ${reservation.nodeId}`);
    if (providerId !== undefined) (this.excluded ??= new Set()).add(providerId);
    this.resolveRetry();
    this.earlierQueueMs += reservation.queueMs;
    reservation.release();
    this.reservation = undefined;
    this.span?.end(`retried after ${failure}: ${message}`);
    this.span = undefined;
    this.seqBase = this.lastSeq;
    // The next attempt's first event tells the bus (the dashboard's run log) the provider that now runs it.
    this.admittedPublished = false;
  }

  /** A retry after the handle was returned: placed again in the background, within the run's one deadline. */
  private retryBehindHandle(
    failure: DispatchFailureReason,
    failed: Extract<RunEventPart, { type: 'error' }>,
  ): void {
    const reservation = this.reservation as Reservation;
    this.beginRetry(reservation, failure, `${failed.code}: ${failed.message}`);
    void this.placeAgain(failed);
  }

  /**
   * queued → admitted → dispatched again, behind the handle. When no other provider can take the run (none left,
   * queue full or timed out) or the dispatch fails, the run ends with the error that made it retry.
   */
  private async placeAgain(failed: Extract<RunEventPart, { type: 'error' }>): Promise<void> {
    const { context } = this;
    const wait = new AbortController();
    this.retryWait = wait;
    let reservation: Reservation;
    try {
      reservation = await context.placement.reserve({ ...this.placed(), signal: wait.signal }, undefined);
    } catch {
      if (this.stateNow !== 'ended') this.endHere(failed);
      return;
    } finally {
      this.retryWait = undefined;
    }
    if (this.stateNow === 'ended') {
      reservation.release();
      return;
    }
    this.reservation = reservation;
    this.to('admitted');
    if (context.shuttingDown()) {
      this.endHere(failed);
      return;
    }
    this.to('dispatched');
    const attempt = (this.attemptsNow += 1);
    this.attemptReported = false;
    this.span = context.tracing.enabled ? this.startRunSpan(reservation) : undefined;
    // Superseded: the run ended, or this attempt already failed and another one began, while it was being sent.
    const superseded = () =>
      this.stateNow === 'ended' || this.attemptsNow !== attempt || this.reservation !== reservation;
    try {
      const dispatched = await reservation.dispatch(
        this.placed(),
        this,
        this.span?.traceparent ?? this.request.traceparent ?? '',
      );
      if (superseded()) return;
      this.dispatched = dispatched;
      context.metrics.dispatched(this.request.surface, dispatched.providerId, dispatched.nodeId);
    } catch (error) {
      if (superseded() || this.stateNow !== 'dispatched') return;
      const failure = failureOfError(error);
      if (failure) {
        this.reportFailure(reservation.providerId, failure);
        if (this.mayRetry(reservation.providerId)) {
          this.beginRetry(reservation, failure, error instanceof Error ? error.message : String(error));
          void this.placeAgain(failed);
          return;
        }
      }
      this.endHere(failed);
    }
  }

  /**
   * The key's limits, before any capacity is taken: the allow-list (checked once, here) and, in cluster mode,
   * the reservation on the key's home edge (the principal then carries the lease wherever the run is admitted).
   */
  private takeLimits(): Promise<void> | undefined {
    const principal = this.principal;
    if (!principal) return undefined;
    if (!allowsModel(principal, this.request.model)) {
      throw new ServiceError('model_not_found', `The model '${this.request.model}' does not exist`);
    }
    const sharedLimits = this.context.sharedLimits;
    if (!sharedLimits || principal.lease || !hasLimits(principal)) return undefined;
    return sharedLimits.reserve(principal, this.estimate, this.parent !== undefined).then(
      (leased) => {
        this.principal = leased;
      },
      (error: unknown) => {
        throw isGovernanceError(error) ? fromGovernanceError(error) : error;
      },
    );
  }

  /**
   * The governor's admission of a run admitted on this edge (its limits, or the home edge's lease, and its usage
   * record at the end). A forwarded run is admitted by its owner edge, which receives the lease with the principal.
   */
  private admitHere(): void {
    const governor = this.context.governor;
    if (!governor || this.admission) return;
    try {
      this.admission = governor.admit({
        principal: this.principal,
        surface: this.request.surface,
        model: this.request.model,
        estimatedTokens: this.estimate,
        child: this.parent !== undefined,
      });
    } catch (error) {
      if (isGovernanceError(error)) throw fromGovernanceError(error);
      throw error;
    }
  }

  private startRunSpan(reservation: Reservation): TraceSpan | undefined {
    const request = this.request;
    return this.context.tracing.startSpan('iop.edge.run', {
      parent: request.traceparent,
      kind: 'client',
      attributes: {
        'iop.run_id': this.runId,
        'iop.node': reservation.nodeId,
        'iop.adapter': reservation.adapter,
        'iop.target': reservation.target,
        'iop.provider': reservation.providerId ?? '',
        'iop.surface': request.surface,
        'iop.attempt': this.attemptsNow,
        ...(reservation.edgeId !== undefined ? { 'iop.edge': reservation.edgeId } : {}),
      },
    });
  }

  /** Arms the one deadline and the caller's abort signal, once the run is on its way. */
  private arm(): void {
    if (this.stateNow === 'ended') return;
    const timeoutMs = this.request.spec.timeoutMs;
    if (timeoutMs) {
      const deadline = timeoutMs + this.context.deadlineGraceMs + (this.reservation?.deadlineSlackMs ?? 0);
      this.deadlineTimer = this.context.clock.setTimeout(() => {
        this.deadlineTimer = undefined;
        this.reservation?.cancel('deadline');
        this.endHere({
          type: 'error',
          code: 'run_timeout',
          message: `run ${this.runId} exceeded its ${deadline} ms deadline`,
          retryable: true,
          backendMs: 0,
        });
      }, deadline);
    }
    const signal = this.request.signal;
    if (signal) {
      if (signal.aborted) this.onAbort();
      else watchAbort(signal, this.onAbort);
    }
  }

  /** Ends the run with a terminal part made here (the executor sent none). */
  private endHere(part: Extract<RunEventPart, { type: 'error' | 'cancelled' }>): void {
    if (this.stateNow === 'ended') return;
    this.lastSeq += 1;
    this.end({
      runId: this.runId,
      nodeId: this.dispatched?.nodeId ?? this.reservation?.nodeId ?? '',
      seq: this.lastSeq,
      atUnixMs: this.context.clock.now(),
      part,
    });
  }

  /** The one end of a dispatched run: stop the timers, release everything once, deliver the terminal part. */
  private end(terminal: RunEventWithMeta): void {
    this.to('ended');
    if (this.children) this.endChildren(`parent run ${this.runId} ended`);
    this.endedAt = this.durationNow();
    const { clock, events } = this.context;
    if (this.deadlineTimer !== undefined) clock.clearTimeout(this.deadlineTimer);
    if (this.cancelTimer !== undefined) clock.clearTimeout(this.cancelTimer);
    this.deadlineTimer = undefined;
    this.cancelTimer = undefined;
    if (this.request.signal) unwatchAbort(this.request.signal, this.onAbort);
    // A retry waiting in the pool's queue leaves it (its reserve rejects, and holds nothing).
    this.retryWait?.abort();
    this.reservation?.release();
    if (this.here) events.publish({ type: 'run', event: this.forBus(terminal) });
    this.stream.end(terminal);
    const outcome = outcomeOf(terminal.part);
    this.outcomeNow = outcome;
    this.span?.end(outcome.status === 'error' ? `${outcome.code}: ${outcome.message}` : undefined);
    const children = this.childrenSubmitted === 0 ? undefined : this.childUsage();
    this.finishLimits({
      runId: this.runId,
      outcome: outcome.status,
      usage: children ? this.ownUsage(children) : this.delivered.usage(),
      provider: this.dispatched?.providerId ?? this.reservation?.providerId ?? '',
      node: terminal.nodeId,
      queueMs: this.dispatched?.queueMs ?? 0,
      durationMs: this.endedAt - this.submittedAt,
      parentRunId: this.parent ? this.parent.runId : '',
      childTokens: children ? children.inputTokens + children.outputTokens : 0,
    });
    if (this.parent) this.leaveParent(outcome.status);
    this.context.unregister(this);
    this.resolveDone(outcome);
  }

  /** The parent ended: each live child is cancelled where it runs, or leaves the queue where it waits. */
  private endChildren(reason: string): void {
    for (const child of [...(this.children ?? [])]) {
      // Cancel first: a running child ends with this reason, not as a client disconnect.
      void child.cancel(reason);
      child.childAbort?.abort(new ServiceError('aborted', reason));
    }
  }

  /** A child's end: its tokens go to its parent, its result to the metric. */
  private leaveParent(result: ChildRunResult): void {
    const parent = this.parent as RunSupervisor;
    if (parent.children?.delete(this)) {
      const usage = this.delivered.usage();
      parent.childInputEnded += usage.inputTokens;
      parent.childOutputEnded += usage.outputTokens;
    }
    this.context.metrics.childEnded?.(result);
  }

  /** A run refused before it was dispatched: release what was taken, record it, map the error (once). */
  private refuse(error: unknown): ServiceError {
    const mapped = this.serviceError(error);
    const previous = this.stateNow;
    if (previous !== 'ended') this.to('ended');
    if (this.children) this.endChildren(`parent run ${this.runId} ended`);
    if (previous === 'dispatched') this.context.unregister(this);
    const reservation = this.reservation;
    reservation?.release();
    this.span?.end(mapped.message);
    this.finishLimits({
      runId: '',
      outcome: mapped.code === 'aborted' ? 'cancelled' : 'rejected',
      usage: { inputTokens: 0, outputTokens: 0 },
      provider: reservation?.providerId ?? '',
      node: reservation?.nodeId ?? '',
      queueMs: reservation?.queueMs ?? 0,
      durationMs: 0,
      parentRunId: this.parent ? this.parent.runId : '',
      childTokens: 0,
    });
    this.outcomeNow = { status: 'error', code: mapped.code, message: mapped.message };
    if (this.parent) this.leaveParent(mapped.code === 'aborted' ? 'cancelled' : 'rejected');
    this.resolveDone(this.outcomeNow);
    return mapped;
  }

  /**
   * The limit lease, once: the governor's admission records the run and corrects the lease to its tokens. A run
   * forwarded elsewhere was admitted by its owner, which finishes the lease — unless it ended here without the
   * owner's word (or was never taken there): then the lease is returned from here.
   */
  private finishLimits(end: RunEnd): void {
    if (this.admission) {
      this.admission.finish(end);
      return;
    }
    if (!this.endedByExecutor) this.principal?.lease?.finish(0);
  }

  private serviceError(error: unknown): ServiceError {
    if (error instanceof ServiceError) return error;
    if (isPlacementError(error)) {
      const reason =
        error.code === 'queue_full' || error.code === 'queue_timeout'
          ? error.code
          : error.code === 'no_provider_available'
            ? 'no_provider'
            : undefined;
      if (reason) this.context.metrics.rejected(this.request.surface, error.details.model ?? '', reason);
      return fromPlacementError(error);
    }
    const message = error instanceof Error ? error.message : String(error);
    return new ServiceError('node_error', `node ${this.reservation?.nodeId ?? ''}: ${message}`, {
      cause: error,
    });
  }

  /** The event as the bus carries it: the run's first one also says how the run was admitted. */
  private forBus(event: RunEventWithMeta): RunEventWithMeta {
    if (this.admittedPublished) return event;
    this.admittedPublished = true;
    const admitted: RunAdmitted = {
      surface: this.request.surface,
      model: this.request.destination.kind === 'model' ? this.request.destination.model : '',
      providerId: this.dispatched?.providerId ?? this.reservation?.providerId ?? '',
      queueMs: this.dispatched?.queueMs ?? this.reservation?.queueMs ?? 0,
    };
    if (this.parent) admitted.parentRunId = this.parent.runId;
    // Named fields: one object (a spread plus the extra field also allocates a property store for it).
    return {
      runId: event.runId,
      nodeId: event.nodeId,
      seq: event.seq,
      atUnixMs: event.atUnixMs,
      part: event.part,
      admitted,
    };
  }

  private to(next: RunState): void {
    assertTransition(this.runId, this.stateNow, next);
    this.stateNow = next;
    this.context.onState?.(this, next);
  }

  /** The clock's monotonic reading when it has one (sub-millisecond), else its epoch milliseconds. */
  private durationNow(): number {
    const clock = this.context.clock;
    return clock.monotonicNow ? clock.monotonicNow() : clock.now();
  }
}

/**
 * A supervised run's RunHandle: its methods live on the prototype (no closures per run). Where the run executes
 * is read from the supervisor, so after a retry before the first output it names the latest attempt.
 */
class SupervisedRunHandle implements RunHandle {
  readonly runId: string;
  readonly events: RunEventStream;
  readonly done: Promise<RunOutcome>;
  readonly #run: RunSupervisor;

  constructor(
    run: RunSupervisor,
    readonly submittedAt: number,
  ) {
    this.#run = run;
    this.runId = run.runId;
    this.events = run.stream;
    this.done = run.done;
  }

  get nodeId(): string {
    return this.#run.where.nodeId;
  }

  get adapter(): string {
    return this.#run.where.adapter;
  }

  get target(): string {
    return this.#run.where.target;
  }

  get sessionId(): string {
    return this.#run.where.sessionId;
  }

  get providerId(): string | undefined {
    return this.#run.where.providerId;
  }

  get queueMs(): number {
    return this.#run.queueMs;
  }

  get attempts(): number {
    return this.#run.attempts;
  }

  cancel(reason?: string): Promise<void> {
    return this.#run.cancel(reason);
  }

  overheadMs(): number | undefined {
    return this.#run.overheadMs();
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

/** A child's principal: the parent's, without the parent's home-edge lease (a lease is finished once, by its run). */
function withoutLease(principal: Principal | undefined): Principal | undefined {
  if (principal?.lease === undefined) return principal;
  const { lease: _lease, ...rest } = principal;
  return rest;
}

/** The run's affinity key under `model`'s policy (affinity-key.ts); undefined when the model has none. */
function attemptAffinityKey(
  spec: RunSpec,
  principal: Principal | undefined,
  model: PlacementRequest['modelPolicy'],
): string | undefined {
  return model?.affinity ? affinityKeyFor(spec, principal?.id, model.affinity) : undefined;
}
