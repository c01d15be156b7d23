// Test support for the surfaces (OpenAI, A2A, CLI smoke): an EdgeService whose runs stream scripted parts with
// delays, honour their AbortSignal and cancel(), end with node_disconnected when their node is dropped, and
// count everything tests assert on. Given a real ProviderPool it admits `{ kind: 'model' }` runs through it the
// way the service does (lease held until the run ends, generation policy, session slots), so surface tests see
// real queueing, 429/503 refusals and provider spread.
import {
  create,
  type ChatMessage,
  type GenerationParams,
  type NodeCommandResponse,
  type RunEventPart,
} from '@iop/wire';
import { isPoolError } from '../pool/errors.js';
import type { Lease, ProviderPool } from '../pool/provider-pool.js';
import { fromPoolError } from '../service/edge-service.js';
import { ServiceError } from '../service/errors.js';
import { applyGenerationPolicy } from '../service/generation-policy.js';
import { SessionSlots, type SessionSlot } from '../service/session-slots.js';
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
}

export interface RunScript {
  /** Parts in order; without a terminal part the run waits for a cancel. */
  parts: RunEventPart[];
  /** Delay before each part. */
  delayMs?: number;
  /** submitRun rejects with this instead of starting. */
  submitError?: Error;
}

export type Scripter = (input: SubmittedRun) => RunScript;

/** The default script: answers `echo: <last message>`. */
export const echoScripter: Scripter = (input) => ({
  parts: [
    { type: 'start', sessionId: input.sessionId, adapter: input.adapter, target: input.target },
    { type: 'text-delta', text: `echo: ${input.messages.at(-1)?.content ?? ''}` },
    { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
  ],
});

export function fakeNode(nodeId: string, alias = nodeId): NodeSummary {
  return {
    nodeId,
    alias,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    hostname: 'host',
    remoteAddress: '127.0.0.1:1',
    connectedSinceUnixMs: 0,
    lastHeartbeatUnixMs: 0,
    adapters: ['cli'],
    providers: [],
  };
}

interface FakeRun {
  nodeId: string;
  end(part: RunEventPart): void;
}

export class FakeEdgeService implements EdgeService {
  readonly submitted: SubmittedRun[] = [];
  /** Ids of runs cancelled on the node (cancel() or an aborted signal), in order. */
  readonly cancelled: string[] = [];
  readonly terminated: SessionRef[] = [];
  active = 0;
  peakActive = 0;
  /** Highest number of simultaneous runs seen per provider id. */
  readonly peakByProvider = new Map<string, number>();
  private readonly activeByProvider = new Map<string, number>();
  private runSeq = 0;
  private readonly runs = new Map<string, FakeRun>();

  private readonly sessions = new SessionSlots();

  /**
   * `nodes` are the connected nodes; a run without a node goes to the first, and fails with none. `pool` admits
   * model runs (without one, a model destination is `model_not_found`).
   */
  constructor(
    public scripter: Scripter = echoScripter,
    private readonly nodes: () => NodeSummary[] = () => [fakeNode('node-a')],
    private readonly pool?: ProviderPool,
  ) {}

  get models(): ModelCatalog {
    const pool = this.pool;
    return {
      has: (model) => pool?.hasModel(model) ?? false,
      get: (model) => pool?.model(model),
      ids: () => pool?.modelIds() ?? [],
    };
  }

  providers(): ProviderStatus[] {
    return this.pool?.snapshot() ?? [];
  }

  admissionTotals() {
    return this.pool?.totals() ?? { inFlight: 0, queued: 0 };
  }

  /** Runs cancelled on the node. */
  get cancels(): number {
    return this.cancelled.length;
  }

  async submitRun(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle> {
    let lease: Lease | undefined;
    let params = spec.params;
    const queuedAt = performance.now();
    if (destination.kind === 'model') {
      if (!this.pool)
        throw new ServiceError('model_not_found', `The model '${destination.model}' does not exist`);
      try {
        lease = await this.pool.acquire(destination.model, { signal: options.signal });
      } catch (error) {
        throw isPoolError(error) ? fromPoolError(error) : error;
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
    };
    const release = () => {
      slot.release();
      lease?.release();
    };
    const script = this.scripter(input);
    if (script.submitError) {
      release();
      throw script.submitError;
    }
    let nodeId: string;
    try {
      nodeId = input.node ?? this.resolveNode().nodeId;
    } catch (error) {
      release();
      throw error instanceof Error ? error : new Error(String(error));
    }
    this.submitted.push(input);
    const runId = input.runId ?? `run-${++this.runSeq}`;
    this.active += 1;
    this.peakActive = Math.max(this.peakActive, this.active);
    const provider = input.providerId ?? '';
    const providerActive = (this.activeByProvider.get(provider) ?? 0) + 1;
    this.activeByProvider.set(provider, providerActive);
    this.peakByProvider.set(provider, Math.max(this.peakByProvider.get(provider) ?? 0, providerActive));

    // A single-consumer queue fed by the script timer, cancel(), the signal and node disconnects.
    const queue: RunEventPart[] = [];
    let wake: (() => void) | undefined;
    let terminal = false;
    let settle!: (outcome: RunOutcome) => void;
    const done = new Promise<RunOutcome>((resolve) => (settle = resolve));
    // Without a delay, parts follow each other on setImmediate (setTimeout 0 would cap a run at ~1000 parts/s).
    let cancelTimer: (() => void) | undefined;
    const schedule = (callback: () => void) => {
      if (script.delayMs) {
        const handle = setTimeout(callback, script.delayMs);
        cancelTimer = () => clearTimeout(handle);
      } else {
        const handle = setImmediate(callback);
        cancelTimer = () => clearImmediate(handle);
      }
    };
    const push = (part: RunEventPart) => {
      if (terminal) return;
      queue.push(part);
      if (part.type === 'complete' || part.type === 'error' || part.type === 'cancelled') {
        terminal = true;
        cancelTimer?.();
        this.active -= 1;
        this.activeByProvider.set(provider, (this.activeByProvider.get(provider) ?? 0) - 1);
        this.runs.delete(runId);
        input.signal?.removeEventListener('abort', onAbort);
        release();
        settle(outcomeOf(part));
      }
      wake?.();
    };
    // Like the real service, an aborted signal sends CANCEL_RUN to the node.
    const onAbort = () => {
      if (!terminal) this.cancelled.push(runId);
      push({ type: 'cancelled', reason: 'client disconnected' });
    };
    input.signal?.addEventListener('abort', onAbort, { once: true });
    this.runs.set(runId, { nodeId, end: push });

    let index = 0;
    const step = () => {
      const part = script.parts[index++];
      if (!part) return;
      push(part);
      if (!terminal) schedule(step);
    };
    schedule(step);

    let seq = 0;
    const events: AsyncIterable<RunEventWithMeta> = {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<RunEventWithMeta>> => {
          for (;;) {
            const part = queue.shift();
            if (part) {
              return { value: { runId, nodeId, seq: ++seq, atUnixMs: Date.now(), part }, done: false };
            }
            if (terminal) return { value: undefined, done: true };
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
          }
        },
        return: () => Promise.resolve({ value: undefined, done: true }),
      }),
    };
    return {
      runId,
      nodeId,
      adapter,
      target,
      sessionId: slot.sessionId,
      providerId: lease?.providerId,
      queueMs: lease ? performance.now() - queuedAt : 0,
      submittedAt: performance.now(),
      events,
      done,
      cancel: (reason?: string) => {
        if (!terminal) this.cancelled.push(runId);
        push({ type: 'cancelled', reason: reason ?? 'cancelled' });
        return Promise.resolve();
      },
      overheadMs: () => (terminal ? 1.25 : undefined),
    };
  }

  /** Every run on the node ends with a node_disconnected error, as the real service does. */
  disconnectNode(nodeId: string): void {
    for (const run of [...this.runs.values()]) {
      if (run.nodeId === nodeId) {
        run.end({
          type: 'error',
          code: 'node_disconnected',
          message: `node ${nodeId} disconnected`,
          retryable: true,
          backendMs: 0,
        });
      }
    }
  }

  cancelRun(runId: string): Promise<boolean> {
    const run = this.runs.get(runId);
    run?.end({ type: 'cancelled', reason: 'operator' });
    return Promise.resolve(run !== undefined);
  }

  terminateSession(ref: SessionRef): Promise<string> {
    this.terminated.push(ref);
    try {
      return Promise.resolve(this.resolveNode(ref.node).nodeId);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse> {
    try {
      this.resolveNode(input.node);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return Promise.resolve(
      create.nodeCommandResponse({ ok: true, result: { command: input.request.command } }),
    );
  }

  usageStatus(ref: SessionRef): Promise<NodeCommandResponse> {
    return this.nodeCommand({ node: ref.node, request: create.nodeCommandRequest({ command: 'status' }) });
  }

  listNodes(): NodeSummary[] {
    return this.nodes();
  }

  /** By id or alias; without a ref the first connected node. */
  resolveNode(ref?: string): NodeSummary {
    const nodes = this.nodes();
    if (ref) {
      const node = nodes.find((candidate) => candidate.nodeId === ref || candidate.alias === ref);
      if (!node) throw new ServiceError('node_not_found', `node ${ref} is not connected`);
      return node;
    }
    const [node] = nodes;
    if (!node) throw new ServiceError('no_nodes', 'no node is connected');
    return node;
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
