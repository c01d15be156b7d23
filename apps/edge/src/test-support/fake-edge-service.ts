// Test support: the one fake EdgeService of the edge's tests (surfaces, console, admin, CLI). It implements the
// real interface with scripted runs and no transport:
// - runs play a Scripter's parts with delays (`scripter`), or are driven by the test through `FakeRun.emit`
//   (`script`, e.g. the fake-cli profile's behaviour for the console);
// - runs honour their AbortSignal and cancel(), end with node_disconnected when their node is dropped, publish
//   their events on a bus when one is given, and count everything tests assert on;
// - given a real ProviderPool it admits `{ kind: 'model' }` runs through it the way the service does (lease held
//   until the run ends, generation policy, session slots), so surface tests see real queueing, 429/503 refusals
//   and provider spread;
// - node commands, usage status and terminate are recorded and answered from settable responses.
import {
  create,
  type ChatMessage,
  type GenerationParams,
  type NodeCommandResponse,
  type RunEventPart,
} from '@iop/wire';
import type { EventBus } from '../events/types.js';
import { systemClock } from '../clock.js';
import { RunRegistry } from '../service/run-registry.js';
import { isPlacementError } from '../placement/errors.js';
import { fromLowerError } from '../placement/lower-errors.js';
import type { Lease, ProviderPool } from '../pool/provider-pool.js';
import { fromPlacementError } from '../service/run-errors.js';
import { ServiceError } from '../service/errors.js';
import { applyGenerationPolicy } from '../placement/generation-policy.js';
import { RunEventStream } from '../service/run-event-stream.js';
import { SessionSlots, type SessionSlot } from '../placement/session-slots.js';
import type { Principal } from '../governance/principal.js';
import type {
  AgentRunView,
  EdgeService,
  ModelCatalog,
  NodeCommandInput,
  NodeSummary,
  ParentRef,
  ProviderStatus,
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunOutcome,
  RunSpec,
  RunSurface,
  SessionRef,
  SubmitOptions,
} from '../service/types.js';

/** A submitted run as the node would see it: where it went and what it carried. */
export interface SubmittedRun extends Omit<RunSpec, 'session'> {
  destination: RunDestination;
  surface: RunSurface;
  /** The node named by the route, or the node the pool picked; undefined = "the only connected node". */
  node: string | undefined;
  adapter: string;
  target: string;
  sessionId: string;
  providerId: string | undefined;
  messages: ChatMessage[];
  params: GenerationParams | undefined;
  signal: AbortSignal | undefined;
  /** The principal the surface passed (undefined = anonymous). */
  principal?: Principal;
  /** The parent the surface named (a child run). */
  parent?: ParentRef;
}

export interface RunScriptParts {
  /** Parts in order; without a terminal part the run waits for a cancel. */
  parts: RunEventPart[];
  /** Delay before each part. */
  delayMs?: number;
  /** submitRun rejects with this instead of starting. */
  submitError?: Error;
}

export type Scripter = (input: SubmittedRun) => RunScriptParts;

/** A run the fake started. */
export interface FakeRun {
  input: SubmittedRun;
  runId: string;
  nodeId: string;
  /** Reasons of the cancels it received (cancel(), its signal, cancelRun). */
  cancelReasons: string[];
  /** Sends a part to the run's reader (and the bus); ignored once a terminal part was sent. */
  emit(part: RunEventPart): void;
  readonly ended: boolean;
  done: Promise<RunOutcome>;
}

/** A run driven by the test instead of a Scripter: called right after the run is created. */
export type RunScript = (run: FakeRun) => void;

/** The default script: answers `echo: <last message>`. */
export const echoScripter: Scripter = (input) => ({
  parts: [
    { type: 'start', sessionId: input.sessionId, adapter: input.adapter, target: input.target },
    { type: 'text-delta', text: `echo: ${input.messages.at(-1)?.content ?? ''}` },
    { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
  ],
});

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

/** A connected node as the service lists it. */
export function fakeNode(
  nodeId: string,
  alias = nodeId,
  connectedSinceUnixMs = 1_700_000_000_000,
): NodeSummary {
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

export interface FakeEdgeOptions {
  /** Publishes every run event (as the real service does). */
  bus?: EventBus;
  /**
   * How a run or command without a node is placed: `first` connected node (default), or `only`: like the real
   * service, an error when none or several are connected.
   */
  nodeFallback?: 'first' | 'only';
}

export class FakeEdgeService implements EdgeService {
  readonly submitted: SubmittedRun[] = [];
  /** Every run started, in order. */
  readonly runs: FakeRun[] = [];
  /** Ids of runs cancelled on the node (cancel(), an aborted signal or cancelRun), in order. */
  readonly cancelled: string[] = [];
  /** cancelRun() calls, found or not. */
  readonly cancelRunCalls: { runId: string; reason?: string }[] = [];
  readonly terminated: SessionRef[] = [];
  readonly commands: NodeCommandInput[] = [];
  readonly usageCalls: SessionRef[] = [];
  /** Answers to node commands by command name; unknown commands echo `{ command }` (or fail, see below). */
  commandResponses: Map<string, NodeCommandResponse | Error> = new Map();
  /** Answers commands by the whole request (e.g. capabilities per adapter); wins over commandResponses. */
  commandHandler: ((input: NodeCommandInput) => NodeCommandResponse | undefined) | undefined;
  /** What `agentRuns()` answers. */
  agentRunList: AgentRunView[] = [];
  /** What `providers()` answers when set (else the pool's status). */
  providerList: ProviderStatus[] | undefined;
  /** When set, unknown commands answer `ok: false` "unknown command ..." instead of echoing. */
  refuseUnknownCommands = false;
  /** When set, usageStatus answers this instead of running the `status` command. */
  usageResponse: NodeCommandResponse | Error | undefined;
  /** When set, runs are driven by this instead of the scripter. */
  script: RunScript | undefined;
  /** When set, submitRun rejects with it. */
  submitError: Error | undefined;
  active = 0;
  peakActive = 0;
  /** Highest number of simultaneous runs seen per provider id. */
  readonly peakByProvider = new Map<string, number>();
  private readonly activeByProvider = new Map<string, number>();
  private readonly running = new Map<string, FakeRun>();
  private readonly sessions = new SessionSlots();
  private nodeList: NodeSummary[] = [];
  private runSeq = 0;

  /**
   * `nodes` are the connected nodes (a list the test may change, or a function read on every call). `pool`
   * admits model runs (without one, a model destination is `model_not_found`).
   */
  constructor(
    public scripter: Scripter = echoScripter,
    private readonly nodeSource: (() => NodeSummary[]) | NodeSummary[] = () => [fakeNode('node-a')],
    private readonly pool?: ProviderPool,
    private readonly options: FakeEdgeOptions = {},
  ) {
    if (Array.isArray(nodeSource)) this.nodeList = nodeSource;
  }

  /** The fake as the console and admin tests use it: test-driven fake-cli runs, no node until one is added. */
  static forConsole(bus?: EventBus): FakeEdgeService {
    const service = new FakeEdgeService(echoScripter, [], undefined, {
      ...(bus ? { bus } : {}),
      nodeFallback: 'only',
    });
    service.script = fakeCliScript;
    service.refuseUnknownCommands = true;
    service.usageResponse = create.nodeCommandResponse({ ok: false, error: 'unset' });
    return service;
  }

  /** The connected nodes (assignable when the fake was built over a list). */
  get nodes(): NodeSummary[] {
    return Array.isArray(this.nodeSource) ? this.nodeList : this.nodeSource();
  }

  set nodes(list: NodeSummary[]) {
    this.nodeList = list;
  }

  get models(): ModelCatalog {
    const pool = this.pool;
    return {
      has: (model) => pool?.hasModel(model) ?? false,
      get: (model) => pool?.model(model),
      ids: () => pool?.modelIds() ?? [],
      backends: (model) => pool?.modelBackends(model) ?? [],
    };
  }

  /** A running run on that node (its principal as the surface passed it). */
  resolveParent(parent: ParentRef): { principal: Principal | undefined } | undefined {
    const run = this.running.get(parent.runId);
    if (!run || run.nodeId !== parent.nodeId) return undefined;
    return { principal: run.input.principal };
  }

  agentRuns(): AgentRunView[] {
    return this.agentRunList;
  }

  providers(): ProviderStatus[] {
    return this.providerList ?? this.pool?.snapshot() ?? [];
  }

  admissionTotals() {
    return this.pool?.totals() ?? { inFlight: this.active, queued: 0 };
  }

  /** Runs cancelled on the node. */
  get cancels(): number {
    return this.cancelled.length;
  }

  async submitRun(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle> {
    if (this.submitError) throw this.submitError;
    if (options.parent && !this.resolveParent(options.parent)) {
      throw new ServiceError('parent_not_live', `run ${options.parent.runId} is not a live run`);
    }
    let lease: Lease | undefined;
    let params = spec.params;
    const queuedAt = performance.now();
    if (destination.kind === 'model') {
      if (!this.pool)
        throw new ServiceError('model_not_found', `The model '${destination.model}' does not exist`);
      try {
        lease = await this.pool.acquire(destination.model, { signal: options.signal });
      } catch (error) {
        // As the real service hears it: the pool's refusal through placement's errors.
        const placed = fromLowerError(error);
        throw isPlacementError(placed) ? fromPlacementError(placed) : placed;
      }
      const policy = this.pool.model(destination.model);
      if (policy) {
        params = applyGenerationPolicy(
          params ?? create.generationParams({}),
          policy,
          spec.reasoningRequested ?? false,
        );
      }
    }
    const adapter = lease ? lease.adapter : destination.kind === 'route' ? destination.adapter : '';
    const target = lease ? lease.target : destination.kind === 'route' ? destination.target : '';
    const node = lease ? lease.nodeId : destination.kind === 'route' ? destination.node : undefined;
    const slot: SessionSlot =
      spec.session.kind === 'fixed'
        ? { sessionId: spec.session.sessionId, release: () => undefined }
        : this.sessions.acquire(node ?? '', adapter, target, spec.session.baseId);
    const { session: _session, ...rest } = spec;
    const input: SubmittedRun = {
      ...rest,
      destination,
      surface: options.surface,
      node,
      adapter,
      target,
      sessionId: slot.sessionId,
      providerId: lease?.providerId,
      params,
      signal: options.signal,
      ...(options.principal ? { principal: options.principal } : {}),
      ...(options.parent ? { parent: options.parent } : {}),
    };
    const release = () => {
      slot.release();
      lease?.release();
    };
    const scripted = this.script ? undefined : this.scripter(input);
    let nodeId: string;
    try {
      if (scripted?.submitError) throw scripted.submitError;
      nodeId = this.resolveNode(input.node).nodeId;
    } catch (error) {
      release();
      throw error instanceof Error ? error : new Error(String(error));
    }
    this.submitted.push(input);
    const { run, events } = this.startRun(input, nodeId, release);
    if (this.script) this.script(run);
    else if (scripted) this.play(run, scripted);
    return {
      runId: run.runId,
      nodeId,
      adapter,
      target,
      sessionId: slot.sessionId,
      providerId: lease?.providerId,
      queueMs: lease ? performance.now() - queuedAt : 0,
      submittedAt: performance.now(),
      events,
      done: run.done,
      cancel: (reason?: string) => {
        this.cancelOnNode(run, reason ?? 'cancelled');
        return Promise.resolve();
      },
      overheadMs: () => (run.ended ? 1.25 : undefined),
    };
  }

  /** Every run on the node ends with a node_disconnected error, as the real service does. */
  disconnectNode(nodeId: string): void {
    for (const run of [...this.running.values()]) {
      if (run.nodeId !== nodeId) continue;
      run.emit({
        type: 'error',
        code: 'node_disconnected',
        message: `node ${nodeId} disconnected`,
        retryable: true,
        backendMs: 0,
      });
    }
  }

  cancelRun(runId: string, reason?: string): Promise<boolean> {
    this.cancelRunCalls.push({ runId, reason });
    const run = this.running.get(runId);
    if (run) this.cancelOnNode(run, reason ?? 'cancelled');
    return Promise.resolve(run !== undefined);
  }

  terminateSession(ref: SessionRef): Promise<string> {
    try {
      const nodeId = this.resolveNode(ref.node).nodeId;
      this.terminated.push(ref);
      return Promise.resolve(nodeId);
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
    const command = input.request.command;
    const response = this.commandHandler?.(input) ?? this.commandResponses.get(command);
    if (response instanceof Error) return Promise.reject(response);
    if (response) return Promise.resolve(response);
    return Promise.resolve(
      this.refuseUnknownCommands
        ? create.nodeCommandResponse({ ok: false, error: `unknown command ${command}` })
        : create.nodeCommandResponse({ ok: true, result: { command } }),
    );
  }

  usageStatus(ref: SessionRef): Promise<NodeCommandResponse> {
    this.usageCalls.push(ref);
    const response = this.usageResponse;
    if (response instanceof Error) return Promise.reject(response);
    if (response) return Promise.resolve(response);
    return this.nodeCommand({
      ...(ref.node !== undefined ? { node: ref.node } : {}),
      request: create.nodeCommandRequest({ command: 'status' }),
    });
  }

  /** A single edge: the fabric is this edge's nodes (cluster tests override both). */
  inFabric = false;
  /** The registry of long-lived runs; a test of the fabric replaces it with one that has RemoteRuns. */
  runRegistry = new RunRegistry({ clock: systemClock });

  fabricNodes(): NodeSummary[] {
    return this.listNodes();
  }

  listNodes(): NodeSummary[] {
    return [...this.nodes];
  }

  /** By id or alias; without a ref the first connected node (or, with nodeFallback `only`, the only one). */
  resolveNode(ref?: string): NodeSummary {
    const nodes = this.nodes;
    if (ref) {
      const found = nodes.find((candidate) => candidate.nodeId === ref || candidate.alias === ref);
      if (!found) throw new ServiceError('node_not_found', `node ${ref} is not connected`);
      return found;
    }
    const [first] = nodes;
    if (!first) throw new ServiceError('no_nodes', 'no node is connected');
    if (this.options.nodeFallback === 'only' && nodes.length > 1) {
      throw new ServiceError(
        'node_ambiguous',
        'several nodes are connected; choose one with /node <id|alias>',
      );
    }
    return first;
  }

  private startRun(
    input: SubmittedRun,
    nodeId: string,
    release: () => void,
  ): { run: FakeRun; events: RunEventStream } {
    const runId = input.runId ?? `run-${++this.runSeq}`;
    const provider = input.providerId ?? '';
    this.active += 1;
    this.peakActive = Math.max(this.peakActive, this.active);
    const providerActive = (this.activeByProvider.get(provider) ?? 0) + 1;
    this.activeByProvider.set(provider, providerActive);
    this.peakByProvider.set(provider, Math.max(this.peakByProvider.get(provider) ?? 0, providerActive));
    // The service's own stream (unbounded here): surfaces read it both ways (iterating, or forEach).
    const queue = new RunEventStream(Number.MAX_SAFE_INTEGER, false);
    let settle!: (outcome: RunOutcome) => void;
    const done = new Promise<RunOutcome>((resolve) => (settle = resolve));
    let seq = 0;
    let ended = false;
    // Like the real service, an aborted signal sends CANCEL_RUN to the node (reason `client-disconnected`).
    const onAbort = () => this.cancelOnNode(run, 'client-disconnected');
    const run: FakeRun = {
      input,
      runId,
      nodeId,
      cancelReasons: [],
      done,
      get ended() {
        return ended;
      },
      emit: (part) => {
        if (ended) return;
        const event: RunEventWithMeta = { runId, nodeId, seq: ++seq, atUnixMs: Date.now(), part };
        this.options.bus?.publish({ type: 'run', event });
        if (part.type !== 'complete' && part.type !== 'error' && part.type !== 'cancelled') {
          queue.push(event);
          return;
        }
        ended = true;
        this.active -= 1;
        this.activeByProvider.set(provider, (this.activeByProvider.get(provider) ?? 0) - 1);
        this.running.delete(runId);
        input.signal?.removeEventListener('abort', onAbort);
        release();
        queue.end(event);
        settle(outcomeOf(part));
      },
    };
    this.running.set(runId, run);
    this.runs.push(run);
    input.signal?.addEventListener('abort', onAbort, { once: true });
    return { run, events: queue };
  }

  /** Plays a Scripter's parts: with `delayMs` before each, else one per setImmediate (no 1 ms timer floor). */
  private play(run: FakeRun, script: RunScriptParts): void {
    let index = 0;
    const step = () => {
      const part = script.parts[index++];
      if (!part || run.ended) return;
      run.emit(part);
      if (!run.ended) schedule();
    };
    const schedule = () => {
      if (script.delayMs) setTimeout(step, script.delayMs);
      else setImmediate(step);
    };
    schedule();
  }

  private cancelOnNode(run: FakeRun, reason: string): void {
    if (run.ended) return;
    run.cancelReasons.push(reason);
    this.cancelled.push(run.runId);
    run.emit({ type: 'cancelled', reason });
  }
}

function outcomeOf(part: RunEventPart): RunOutcome {
  if (part.type === 'complete')
    return { status: 'completed', detail: part.detail, finishReason: part.finishReason };
  if (part.type === 'error') return { status: 'error', code: part.code, message: part.message };
  return { status: 'cancelled', reason: part.type === 'cancelled' ? part.reason : '' };
}

/** Parts of a plain text answer split into the given pieces. */
export function textRun(
  pieces: string[],
  usage = { promptTokens: 5, completionTokens: pieces.length },
): RunEventPart[] {
  return [
    { type: 'start', sessionId: 's', adapter: 'a', target: 't' },
    ...pieces.map((text): RunEventPart => ({ type: 'text-delta', text })),
    {
      type: 'usage',
      usage: {
        ...usage,
        totalTokens: usage.promptTokens + usage.completionTokens,
        reasoningTokens: 0,
        cachedTokens: 0,
        costUsd: 0,
      },
    },
    { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 },
  ];
}
