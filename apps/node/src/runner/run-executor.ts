// Executes the edge's RunRequests on this node: picks the adapter instance, enforces runtime.max_concurrency,
// streams the adapter's parts to the edge as RunEvents (per-run seq from 1, node timestamps), records history,
// and honours cancels (abort one run) and session terminations.
//
// Lifecycle of a run: submit → slot + adapter hold → adapter.run(signal) → exactly one terminal event sent →
// finally: hold, slot and cancellation released, history finished. Sending awaits the link so a congested edge
// slows the adapter down instead of buffering without bound. `shutdown` aborts every run and waits (bounded).
import {
  CancelAction,
  envelope,
  isTerminalPart,
  toWireRunEvent,
  type CancelRequest,
  type RunEventPart,
  type RunRequest,
  type Usage,
} from '@iop/wire';
import { Cancellation, type AbortSignalLike } from '../adapters/cancellation.js';
import type { AdapterHold } from '../adapters/registry.js';
import type { RunHistory, RunEndRecord } from '../history/run-history.js';
import type { Clock, ClockTimer } from '@iop/clock';
import type { Logger } from '@iop/logging';
import { disabledTracing, type Tracing } from '@iop/tracing';
import { ConcurrencyLimiter, type RunSlot } from './concurrency-limiter.js';
import type { Outbound } from '../link/outbound.js';

/** The registry as the runner uses it (AdapterRegistry implements it). */
export interface AdapterSource {
  acquire(name: string): AdapterHold;
}

export interface RunExecutorDeps {
  adapters: AdapterSource;
  outbound: Outbound;
  history: RunHistory;
  logger: Logger;
  /** Event timestamps, history times and the run deadline. */
  clock: Clock;
  /** Current runtime.max_concurrency (0 = unlimited); read per run because refreshes change it. */
  maxConcurrency: () => number;
  /** How long shutdown waits for aborted runs to send their last event. Default 5000 ms. */
  shutdownGraceMs?: number;
  /** Spans of each run and its backend call, continuing the edge's trace; default off. */
  tracing?: Tracing;
  /** Told after each run ends, with its adapter instance (the resident-model monitor asks that backend again). */
  runEnded?: (adapterName: string) => void;
}

/** Why a run's signal was aborted; adapters see `message` as `signal.reason`. */
type AbortKind = 'cancel' | 'deadline' | 'shutdown' | 'link-lost' | 'session-terminated';

type TerminalPart = Extract<RunEventPart, { type: 'complete' | 'error' | 'cancelled' }>;

interface ActiveRun {
  request: RunRequest;
  /** Aborted on cancel, deadline or shutdown; the adapter's `signal` (a Cancellation: no EventTarget per run). */
  cancellation: Cancellation;
  abortKind: AbortKind | undefined;
  done: Promise<void>;
  /**
   * The run's max_concurrency slot. Released before the terminal event is sent: the edge dispatches the next run
   * as soon as it sees this one end, and that run must find the slot free (the edge bounds runs per node by the
   * same limit).
   */
  slot: RunSlot;
}

export class RunExecutor {
  readonly #deps: RunExecutorDeps;
  readonly #limiter = new ConcurrencyLimiter();
  readonly #runs = new Map<string, ActiveRun>();
  #closed = false;

  constructor(deps: RunExecutorDeps) {
    this.#deps = deps;
  }

  /** Runs in flight (their slots are taken). */
  get inFlight(): number {
    return this.#runs.size;
  }

  get slotsInUse(): number {
    return this.#limiter.inUse;
  }

  /** Starts a run in the background; every outcome (including refusal) reaches the edge as run events. */
  submit(request: RunRequest): void {
    const refusal = this.#refusal(request);
    if (refusal) {
      void this.#refuse(request, refusal);
      return;
    }
    // A child run rides on its parent's slot (concurrency-limiter.ts).
    const slot =
      request.parentRunId === ''
        ? this.#limiter.tryAcquire(this.#deps.maxConcurrency())
        : this.#limiter.child();
    if (!slot) {
      void this.#refuse(request, {
        code: 'node_busy',
        message: `node is running ${this.#limiter.inUse} runs (max_concurrency ${this.#deps.maxConcurrency()})`,
        retryable: true,
      });
      return;
    }
    let hold: AdapterHold;
    try {
      hold = this.#deps.adapters.acquire(request.adapter);
    } catch (error) {
      slot.release();
      void this.#refuse(request, {
        code: errorCode(error, 'adapter_not_found'),
        message: errorMessage(error),
        retryable: false,
      });
      return;
    }
    const active: ActiveRun = {
      request,
      cancellation: new Cancellation(),
      abortKind: undefined,
      done: Promise.resolve(),
      slot,
    };
    this.#runs.set(request.runId, active);
    active.done = this.#execute(active, hold).finally(() => {
      hold.release();
      slot.release();
      this.#runs.delete(request.runId);
      this.#deps.runEnded?.(hold.adapter.name);
    });
  }

  /** CANCEL_RUN aborts that run (its session stays); TERMINATE_SESSION ends the session and its runs. */
  async cancel(request: CancelRequest): Promise<boolean> {
    switch (request.action) {
      case CancelAction.CANCEL_ACTION_CANCEL_RUN:
      case CancelAction.CANCEL_ACTION_UNSPECIFIED: {
        const active = this.#runs.get(request.runId);
        if (!active) {
          this.#deps.logger.debug({ runId: request.runId }, 'cancel for a run that is not running');
          return false;
        }
        this.#abort(active, 'cancel', request.reason || 'cancelled by edge');
        return true;
      }
      case CancelAction.CANCEL_ACTION_TERMINATE_SESSION:
        return this.#terminateSession(request);
      case CancelAction.UNRECOGNIZED:
        this.#deps.logger.warn({ action: request.action }, 'cancel request with an unknown action');
        return false;
      default: {
        const unreachable: never = request.action;
        throw new Error(`unknown cancel action ${String(unreachable)}`);
      }
    }
  }

  /** Aborts every run (link lost: their consumer on the edge is gone). */
  abortAll(kind: 'link-lost' | 'shutdown', reason: string): void {
    for (const active of this.#runs.values()) this.#abort(active, kind, reason);
  }

  /** Refuses new runs, aborts the running ones and waits (bounded) for their final events. */
  async shutdown(reason = 'node shutting down'): Promise<void> {
    this.#closed = true;
    this.abortAll('shutdown', reason);
    await this.idle(this.#deps.shutdownGraceMs ?? 5000);
  }

  /** Resolves when no run is in flight or after `timeoutMs`. */
  async idle(timeoutMs = 5000): Promise<void> {
    const { clock } = this.#deps;
    let timer: ClockTimer | undefined;
    // Kept alive: on shutdown this wait may be the only thing the process is doing.
    const timeout = new Promise<void>(
      (resolve) => (timer = clock.setTimeout(resolve, timeoutMs, { keepAlive: true })),
    );
    try {
      while (this.#runs.size > 0) {
        const pending = Promise.allSettled([...this.#runs.values()].map((active) => active.done));
        const finished = await Promise.race([pending.then(() => true), timeout.then(() => false)]);
        if (!finished) {
          this.#deps.logger.warn(
            { runs: [...this.#runs.keys()] },
            'runs still in flight after the grace period',
          );
          return;
        }
      }
    } finally {
      clock.clearTimeout(timer);
    }
  }

  async #execute(active: ActiveRun, hold: AdapterHold): Promise<void> {
    const { request, cancellation } = active;
    const { logger, clock } = this.#deps;
    const adapter = hold.adapter;
    const startedAt = clock.now();
    let deadline: ClockTimer | undefined;
    if (request.timeoutMs > 0) {
      deadline = clock.setTimeout(
        () => this.#abort(active, 'deadline', `run exceeded its ${request.timeoutMs} ms deadline`),
        request.timeoutMs,
      );
    }
    this.#recordStart(request, adapter.name, startedAt);
    logger.debug(
      { runId: request.runId, adapter: adapter.name, target: request.target, providerId: request.providerId },
      'run started',
    );
    const stream = new RunStream(request.runId, this.#deps);
    let terminal: TerminalPart | undefined;
    let usage: Usage | undefined;
    const tracing = this.#deps.tracing ?? disabledTracing;
    // Off (the default): no span and no attribute object, one branch per run.
    const attributes = tracing.enabled
      ? { 'iop.run_id': request.runId, 'iop.adapter': adapter.name, 'iop.target': request.target }
      : undefined;
    const runSpan = attributes
      ? tracing.startSpan('iop.node.run', { parent: request.traceparent, kind: 'server', attributes })
      : undefined;
    const backendSpan = attributes
      ? tracing.startSpan('iop.node.backend', { parent: runSpan?.traceparent, kind: 'client', attributes })
      : undefined;
    // Untraced here but traced upstream: the backend still joins the edge's trace.
    const traceparent = backendSpan?.traceparent ?? (request.traceparent || undefined);
    try {
      for await (const part of adapter.run(request, {
        signal: cancellation,
        ...(traceparent ? { traceparent } : {}),
      })) {
        if (terminal) {
          logger.warn(
            { runId: request.runId, type: part.type },
            'adapter yielded a part after the terminal one',
          );
          continue;
        }
        const sent =
          active.abortKind === 'deadline' && part.type === 'cancelled' ? this.#deadlineError(active) : part;
        if (sent.type === 'usage') usage = sent.usage;
        if (isTerminalPart(sent)) {
          terminal = sent;
          active.slot.release();
        }
        await stream.emit(sent);
        if (terminal) break;
      }
      if (!terminal) {
        const missing: TerminalPart = cancellation.aborted
          ? active.abortKind === 'deadline'
            ? this.#deadlineError(active)
            : { type: 'cancelled', reason: abortMessage(cancellation) }
          : {
              type: 'error',
              code: 'adapter_protocol',
              message: `adapter '${adapter.name}' ended the run without a terminal event`,
              retryable: false,
              backendMs: 0,
            };
        terminal = missing;
        active.slot.release();
        await stream.emit(missing);
      }
    } catch (error) {
      logger.error(
        { runId: request.runId, adapter: adapter.name, error: errorMessage(error) },
        'adapter run threw',
      );
      if (!terminal) {
        terminal = {
          type: 'error',
          code: 'adapter_failed',
          message: errorMessage(error),
          retryable: false,
          backendMs: 0,
        };
        active.slot.release();
        await stream.emit(terminal).catch(() => undefined);
      }
    } finally {
      clock.clearTimeout(deadline);
      const failure = terminal?.type === 'error' ? `${terminal.code}: ${terminal.message}` : undefined;
      backendSpan?.end(failure);
      runSpan?.end(failure);
      this.#recordFinish(request.runId, terminal, usage);
      logger.debug(
        { runId: request.runId, outcome: terminal?.type ?? 'none', ms: clock.now() - startedAt },
        'run finished',
      );
    }
  }

  #deadlineError(active: ActiveRun): TerminalPart {
    return {
      type: 'error',
      code: 'run_timeout',
      message: abortMessage(active.cancellation),
      retryable: false,
      backendMs: 0,
    };
  }

  async #terminateSession(request: CancelRequest): Promise<boolean> {
    for (const active of this.#runs.values()) {
      const run = active.request;
      if (run.target === request.target && run.sessionId === request.sessionId && sameAdapter(run, request)) {
        this.#abort(active, 'session-terminated', request.reason || 'session terminated');
      }
    }
    let hold: AdapterHold;
    try {
      hold = this.#deps.adapters.acquire(request.adapter);
    } catch (error) {
      this.#deps.logger.warn(
        { adapter: request.adapter, error: errorMessage(error) },
        'terminate session: no adapter',
      );
      return false;
    }
    try {
      const terminated = await hold.adapter.terminateSession(request.target, request.sessionId);
      this.#deps.logger.info(
        { adapter: hold.adapter.name, target: request.target, sessionId: request.sessionId, terminated },
        'session terminated',
      );
      return terminated;
    } catch (error) {
      this.#deps.logger.warn(
        { adapter: request.adapter, error: errorMessage(error) },
        'terminate session failed',
      );
      return false;
    } finally {
      hold.release();
    }
  }

  #abort(active: ActiveRun, kind: AbortKind, reason: string): void {
    if (active.cancellation.aborted) return;
    active.abortKind = kind;
    active.cancellation.abort(reason);
  }

  #refusal(request: RunRequest): { code: string; message: string; retryable: boolean } | undefined {
    if (this.#closed)
      return { code: 'node_shutting_down', message: 'node is shutting down', retryable: true };
    if (!request.runId)
      return { code: 'invalid_request', message: 'run request without run_id', retryable: false };
    if (this.#runs.has(request.runId)) {
      return { code: 'duplicate_run', message: `run ${request.runId} is already running`, retryable: false };
    }
    return undefined;
  }

  /** A run that never reached an adapter: one error event, and a failed history entry. */
  async #refuse(
    request: RunRequest,
    error: { code: string; message: string; retryable: boolean },
  ): Promise<void> {
    this.#deps.logger.warn(
      { runId: request.runId, adapter: request.adapter, code: error.code },
      error.message,
    );
    const part: TerminalPart = { type: 'error', ...error, backendMs: 0 };
    // A duplicate keeps the running run's history untouched.
    const record = error.code !== 'duplicate_run' && request.runId !== '';
    if (record) this.#recordStart(request, request.adapter, this.#deps.clock.now());
    // emit() records the event synchronously before it awaits the link, so the history is complete first.
    const sending = new RunStream(request.runId, this.#deps, record).emit(part);
    if (record) this.#recordFinish(request.runId, part, undefined);
    await sending.catch(() => undefined);
  }

  #recordStart(request: RunRequest, adapter: string, startedAt: number): void {
    this.#safeHistory(() =>
      this.#deps.history.recordStart({
        runId: request.runId,
        adapter,
        target: request.target,
        sessionId: request.sessionId,
        providerId: request.providerId,
        background: request.background,
        startedAt,
      }),
    );
  }

  #recordFinish(runId: string, terminal: TerminalPart | undefined, usage: Usage | undefined): void {
    const endedAt = this.#deps.clock.now();
    let outcome: RunEndRecord;
    switch (terminal?.type) {
      case 'complete':
        outcome = { status: 'completed', endedAt, detail: terminal.detail, usage };
        break;
      case 'cancelled':
        outcome = { status: 'cancelled', endedAt, detail: terminal.reason, usage };
        break;
      case 'error':
        outcome = {
          status: 'error',
          endedAt,
          detail: '',
          errorCode: terminal.code,
          errorMessage: terminal.message,
          usage,
        };
        break;
      case undefined:
        outcome = { status: 'error', endedAt, detail: '', errorCode: 'no_terminal_event', usage };
        break;
      default: {
        const unreachable: never = terminal;
        throw new Error(`unknown terminal part ${JSON.stringify(unreachable)}`);
      }
    }
    this.#safeHistory(() => this.#deps.history.finish(runId, outcome));
  }

  #safeHistory(action: () => void): void {
    try {
      action();
    } catch (error) {
      // History is a record, not the run: a full disk must not fail the run the edge is waiting for.
      this.#deps.logger.warn({ error: errorMessage(error) }, 'run history write failed');
    }
  }
}

/**
 * Numbers and sends one run's events, and mirrors them into history.
 *
 * Adjacent deltas are coalesced: consecutive `text-delta` (or `reasoning-delta`) parts that the adapter produces
 * before it next waits on I/O (one upstream chunk often carries dozens of tokens) leave as one event whose text
 * is their concatenation, flushed on `process.nextTick` (after the adapter's promise chain has drained) or
 * before any other part. The edge and the history see exactly the same text, in fewer frames and rows: one
 * protobuf encode, one frame and one SQLite row per burst instead of per token. A delta of the other kind or
 * any other part ends a burst, so the order of kinds is kept.
 *
 * Sends a run's parts in order. Sends are pipelined: a part does not wait for the previous frames to reach the
 * kernel unless `SEND_WINDOW` are still unacknowledged (backpressure from a congested link) or it is the terminal
 * part (the run ends only once everything is sent). Waiting for each frame made every streamed token its own
 * socket write and event-loop turn; pipelined, the frames of a burst leave in one corked write. A failed send is
 * reported by the next `emit` (frames resolve in order, so nothing after a failure was sent).
 */
const SEND_WINDOW = 64;

class RunStream {
  #seq = 0;
  readonly #runId: string;
  readonly #deps: RunExecutorDeps;
  readonly #record: boolean;
  #unacknowledged = 0;
  #last: Promise<void> = Promise.resolve();
  #failure: Error | undefined;
  /** The burst of deltas not sent yet, and whether its flush is scheduled. */
  #pending: { type: 'text-delta' | 'reasoning-delta'; texts: string[] } | undefined;
  #flushScheduled = false;
  readonly #flushPending = (): void => {
    this.#flushScheduled = false;
    this.#sendPending();
  };

  constructor(runId: string, deps: RunExecutorDeps, record = true) {
    this.#runId = runId;
    this.#deps = deps;
    this.#record = record;
  }

  async emit(part: RunEventPart): Promise<void> {
    this.#throwIfFailed();
    if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
      if (this.#pending?.type !== part.type) {
        this.#sendPending();
        this.#pending = { type: part.type, texts: [] };
      }
      this.#pending.texts.push(part.text);
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        process.nextTick(this.#flushPending);
      }
      if (this.#unacknowledged >= SEND_WINDOW) {
        await this.#last;
        this.#throwIfFailed();
      }
      return;
    }
    this.#sendPending();
    const sending = this.#send(part);
    if (isTerminalPart(part)) {
      await sending;
      return;
    }
    if (this.#unacknowledged >= SEND_WINDOW) {
      await this.#last;
      this.#throwIfFailed();
    }
  }

  /** Sends the pending burst of deltas as one event (nothing when there is none). */
  #sendPending(): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    const text = pending.texts.length === 1 ? pending.texts[0] : pending.texts.join('');
    try {
      // A failed send is reported by the next emit (the pending promise is tracked in #last).
      this.#send({ type: pending.type, text }).catch(() => undefined);
    } catch (error) {
      // Runs on nextTick too, where a throw would be uncaught: keep it for the next emit.
      this.#failure ??= error instanceof Error ? error : new Error(String(error));
    }
  }

  /** Numbers, records and sends one part; resolves when its frame was handed to the link. */
  #send(part: RunEventPart): Promise<boolean> {
    this.#seq += 1;
    const at = this.#deps.clock.now();
    if (this.#record) {
      try {
        const { type, ...payload } = part;
        // Vectors are the answer, not a record of the run: history keeps their count and size.
        const recorded =
          part.type === 'embeddings'
            ? { count: part.items.length, dimensions: part.items[0]?.values.length ?? 0 }
            : payload;
        this.#deps.history.appendEvent({ runId: this.#runId, seq: this.#seq, type, payload: recorded, at });
      } catch (error) {
        this.#deps.logger.warn({ error: errorMessage(error) }, 'run history write failed');
      }
    }
    const sending = this.#deps.outbound.send(
      envelope.runEvent(toWireRunEvent(this.#runId, this.#seq, part, at)),
    );
    this.#unacknowledged += 1;
    this.#last = sending.then(
      () => {
        this.#unacknowledged -= 1;
      },
      (error: unknown) => {
        this.#unacknowledged -= 1;
        this.#failure ??= error instanceof Error ? error : new Error(String(error));
      },
    );
    return sending;
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure;
  }
}

function sameAdapter(run: RunRequest, request: CancelRequest): boolean {
  return !request.adapter || run.adapter === request.adapter;
}

function abortMessage(signal: AbortSignalLike): string {
  const reason: unknown = signal.reason;
  if (typeof reason === 'string') return reason;
  return reason instanceof Error ? reason.message : 'aborted';
}

function errorCode(error: unknown, fallback: string): string {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string')
    return error.code;
  return fallback;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
