// Test doubles for the console and admin tests: an EdgeService and an EventBus that implement the real
// interfaces with scripted behaviour (no transport, no nodes), plus a small async queue.
import { create, type NodeCommandResponse, type RunEventPart } from '@iop/wire';
import type { EdgeEvent, EventBus, EventSubscription, SubscribeOptions } from '../../events/types.js';
import { ServiceError } from '../../service/errors.js';
import type {
  EdgeService,
  ModelCatalog,
  NodeCommandInput,
  NodeSummary,
  ProviderStatus,
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunOutcome,
  RunSpec,
  SessionRef,
  SubmitOptions,
} from '../../service/types.js';
import type { SubmittedRun } from '../../test-support/fake-edge-service.js';

/** An unbounded async queue: push values, end it, iterate it once. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;

  push(item: T): void {
    if (this.ended) return;
    const waiter = this.waiting;
    if (waiter) {
      this.waiting = undefined;
      waiter({ value: item, done: false });
    } else this.items.push(item);
  }

  end(): void {
    this.ended = true;
    const waiter = this.waiting;
    this.waiting = undefined;
    waiter?.({ value: undefined, done: true });
  }

  get isEnded(): boolean {
    return this.ended;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: () => {
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

export class FakeEventBus implements EventBus {
  readonly subscriptions = new Set<AsyncQueue<EdgeEvent>>();

  publish(event: EdgeEvent): void {
    for (const queue of this.subscriptions) queue.push(event);
  }

  subscribe(options?: SubscribeOptions): EventSubscription {
    const queue = new AsyncQueue<EdgeEvent>();
    this.subscriptions.add(queue);
    const close = (): void => {
      queue.end();
      this.subscriptions.delete(queue);
    };
    options?.signal?.addEventListener('abort', close, { once: true });
    if (options?.signal?.aborted) close();
    return {
      dropped: 0,
      close,
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }
}

/** A run the fake service started; the test drives its events. */
export interface FakeRun {
  input: SubmittedRun;
  runId: string;
  nodeId: string;
  events: AsyncQueue<RunEventWithMeta>;
  cancelReasons: string[];
  emit(part: RunEventPart): void;
  done: Promise<RunOutcome>;
}

/** Decides how a submitted run behaves; called right after the handle is created. */
export type RunScript = (run: FakeRun) => void;

export function node(nodeId: string, alias = nodeId, connectedSinceUnixMs = 1_700_000_000_000): NodeSummary {
  return {
    nodeId,
    alias,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    hostname: `${nodeId}-host`,
    remoteAddress: '127.0.0.1:50000',
    connectedSinceUnixMs,
    lastHeartbeatUnixMs: connectedSinceUnixMs + 1000,
    adapters: ['cli'],
    providers: [],
  };
}

/** The fake-cli profile's behaviour: `<TOKEN>_OK` and `<TOKEN>_TAIL` lines, then an idle-timeout completion. */
export const fakeCliScript: RunScript = (run) => {
  const prompt = run.input.messages[0]?.content ?? '';
  const token = (/\b(iop_\w+)/.exec(prompt)?.[1] ?? 'empty').toUpperCase();
  setTimeout(() => {
    run.emit({
      type: 'start',
      sessionId: run.input.sessionId,
      adapter: run.input.adapter,
      target: run.input.target,
    });
    // Split mid-line on purpose: the console must assemble deltas into whole lines.
    run.emit({ type: 'text-delta', text: `${token}_` });
    run.emit({ type: 'text-delta', text: `OK\n${token}_TA` });
    run.emit({ type: 'text-delta', text: 'IL\n' });
    run.emit({ type: 'complete', detail: 'idle-timeout', finishReason: 'stop', backendMs: 5 });
  }, 1);
};

export class FakeEdgeService implements EdgeService {
  nodes: NodeSummary[] = [];
  readonly runs: FakeRun[] = [];
  readonly commands: NodeCommandInput[] = [];
  readonly terminated: SessionRef[] = [];
  readonly cancelled: { runId: string; reason?: string }[] = [];
  readonly usageCalls: SessionRef[] = [];
  commandResponses: Map<string, NodeCommandResponse | Error> = new Map();
  /** Answers commands by the whole request (e.g. capabilities per adapter); wins over commandResponses. */
  commandHandler: ((input: NodeCommandInput) => NodeCommandResponse | undefined) | undefined;
  usageResponse: NodeCommandResponse | Error = create.nodeCommandResponse({ ok: false, error: 'unset' });
  script: RunScript = fakeCliScript;
  submitError: Error | undefined;
  private counter = 0;

  /** What `providers()` answers (the console's /providers). */
  providerList: ProviderStatus[] = [];
  readonly models: ModelCatalog = { has: () => false, get: () => undefined, ids: () => [] };

  constructor(private readonly bus?: EventBus) {}

  providers(): ProviderStatus[] {
    return this.providerList;
  }

  admissionTotals() {
    return { inFlight: this.runs.filter((run) => !run.events.isEnded).length, queued: 0 };
  }

  submitRun(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle> {
    if (this.submitError) return Promise.reject(this.submitError);
    if (destination.kind !== 'route') {
      return Promise.reject(
        new ServiceError('model_not_found', `The model '${destination.model}' does not exist`),
      );
    }
    const { session, ...rest } = spec;
    const input: SubmittedRun = {
      ...rest,
      destination,
      surface: options.surface,
      node: destination.node,
      adapter: destination.adapter,
      target: destination.target,
      sessionId: session.kind === 'fixed' ? session.sessionId : session.baseId,
      providerId: undefined,
      params: spec.params,
      signal: options.signal,
    };
    let target: NodeSummary;
    try {
      target = this.resolveNode(input.node);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const runId = input.runId ?? `run-${++this.counter}`;
    const events = new AsyncQueue<RunEventWithMeta>();
    let seq = 0;
    let settle: (outcome: RunOutcome) => void = () => undefined;
    const done = new Promise<RunOutcome>((resolve) => {
      settle = resolve;
    });
    const run: FakeRun = {
      input,
      runId,
      nodeId: target.nodeId,
      events,
      cancelReasons: [],
      done,
      emit: (part) => {
        if (events.isEnded) return;
        const event: RunEventWithMeta = {
          runId,
          nodeId: target.nodeId,
          seq: ++seq,
          atUnixMs: Date.now(),
          part,
        };
        events.push(event);
        this.bus?.publish({ type: 'run', event });
        if (part.type === 'complete')
          settle({ status: 'completed', detail: part.detail, finishReason: part.finishReason });
        if (part.type === 'error') settle({ status: 'error', code: part.code, message: part.message });
        if (part.type === 'cancelled') settle({ status: 'cancelled', reason: part.reason });
        if (part.type === 'complete' || part.type === 'error' || part.type === 'cancelled') events.end();
      },
    };
    const cancel = (reason = 'cancelled'): Promise<void> => {
      run.cancelReasons.push(reason);
      run.emit({ type: 'cancelled', reason });
      return Promise.resolve();
    };
    input.signal?.addEventListener('abort', () => void cancel('client cancelled'), { once: true });
    this.runs.push(run);
    this.script(run);
    return Promise.resolve({
      runId,
      nodeId: target.nodeId,
      adapter: input.adapter,
      target: input.target,
      sessionId: input.sessionId,
      providerId: undefined,
      queueMs: 0,
      submittedAt: performance.now(),
      events,
      done,
      cancel,
      overheadMs: () => undefined,
    });
  }

  cancelRun(runId: string, reason?: string): Promise<boolean> {
    this.cancelled.push({ runId, reason });
    const run = this.runs.find((candidate) => candidate.runId === runId && !candidate.events.isEnded);
    if (!run) return Promise.resolve(false);
    run.emit({ type: 'cancelled', reason: reason ?? 'cancelled' });
    return Promise.resolve(true);
  }

  terminateSession(ref: SessionRef): Promise<string> {
    try {
      const target = this.resolveNode(ref.node);
      this.terminated.push(ref);
      return Promise.resolve(target.nodeId);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse> {
    this.commands.push(input);
    try {
      this.resolveNode(input.node);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const response = this.commandHandler?.(input) ?? this.commandResponses.get(input.request.command);
    if (response instanceof Error) return Promise.reject(response);
    return Promise.resolve(
      response ??
        create.nodeCommandResponse({ ok: false, error: `unknown command ${input.request.command}` }),
    );
  }

  usageStatus(ref: SessionRef): Promise<NodeCommandResponse> {
    this.usageCalls.push(ref);
    const response = this.usageResponse;
    return response instanceof Error ? Promise.reject(response) : Promise.resolve(response);
  }

  listNodes(): NodeSummary[] {
    return [...this.nodes];
  }

  resolveNode(ref?: string): NodeSummary {
    if (ref) {
      const found = this.nodes.find((candidate) => candidate.nodeId === ref || candidate.alias === ref);
      if (!found) throw new ServiceError('node_not_found', `node ${ref} is not connected`);
      return found;
    }
    if (this.nodes.length === 0) throw new ServiceError('no_nodes', 'no node is connected');
    const only = this.nodes[0];
    if (this.nodes.length > 1 || !only) {
      throw new ServiceError(
        'node_ambiguous',
        'several nodes are connected; choose one with /node <id|alias>',
      );
    }
    return only;
  }
}
