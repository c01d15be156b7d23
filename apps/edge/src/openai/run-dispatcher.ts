// Starts a run for a resolved route and owns its lifetime: the pool lease (pool routes) is held for the whole run,
// streaming included, and released exactly once when the run reaches its terminal part — or, when the caller stops
// early (client disconnect), after the cancelled run settles on the node (bounded by `cancelGraceMs`, so a node
// that never confirms cannot pin capacity).
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import type { Clock } from '../pool/clock.js';
import type { Lease, ProviderPool } from '../pool/provider-pool.js';
import type { Logger } from '../logging.js';
import type { EdgeService, RunEventWithMeta, RunHandle } from '../service/types.js';
import { applyGenerationPolicy } from './generation-policy.js';
import { noMetrics, type OpenAIMetrics } from './openai-metrics.js';
import { SessionSlots, type SessionSlot } from './session-slots.js';
import { isPoolError } from '../pool/errors.js';
import type { ResolvedRoute } from './route-resolver.js';
import type { RunSpec } from './run-spec.js';

export interface RunDispatcherDeps {
  service: EdgeService;
  pool: ProviderPool;
  clock: Clock;
  logger: Logger;
  sessionId: string;
  /** Run deadline passed to the node; 0 = the adapter's default. */
  timeoutMs: number;
  /** How long a cancelled run may take to settle before its lease is returned anyway. Default 10 s. */
  cancelGraceMs?: number;
  metrics?: OpenAIMetrics;
  /** Session slots per node/adapter/target; created when omitted. */
  sessions?: SessionSlots;
}

export interface ActiveRun {
  readonly handle: RunHandle;
  readonly providerId: string | undefined;
  /** Milliseconds spent waiting in the provider queue. */
  readonly queueMs: number;
  /** performance.now() when the run was handed to the service. */
  readonly submittedAt: number;
  /** The run's parts up to and including the terminal one; ends early (without a terminal part) on abort. */
  parts(): AsyncIterable<RunEventPart>;
  /** Call exactly once when done with the run (finally): cancels an unfinished run and arranges the release. */
  finish(reason: string): void;
}

export interface RunDispatcher {
  start(route: ResolvedRoute, spec: RunSpec, signal: AbortSignal): Promise<ActiveRun>;
}

export function createRunDispatcher(deps: RunDispatcherDeps): RunDispatcher {
  const cancelGraceMs = deps.cancelGraceMs ?? 10_000;
  const metrics = deps.metrics ?? noMetrics;
  const sessions = deps.sessions ?? new SessionSlots();
  return {
    async start(route, spec, signal) {
      let lease: Lease | undefined;
      let params = spec.params;
      const queueStarted = performance.now();
      if (route.kind === 'pool') {
        try {
          lease = await deps.pool.acquire(route.model, { signal });
        } catch (error) {
          if (isPoolError(error)) {
            if (error.code === 'queue_full' || error.code === 'queue_timeout')
              metrics.rejected(route.model, error.code);
            else if (error.code === 'no_provider_available') metrics.rejected(route.model, 'no_provider');
          }
          throw error;
        }
        metrics.dispatched(lease.providerId, lease.nodeId);
        // Read the policy after the queue wait: a live config refresh may have changed it meanwhile.
        const policy = deps.pool.model(route.model) ?? route.modelConfig;
        params = applyGenerationPolicy(params, policy, spec.reasoningRequested);
      }
      const queueMs = lease ? performance.now() - queueStarted : 0;
      let handle: RunHandle;
      const submittedAt = performance.now();
      const node = lease ? lease.nodeId : route.kind === 'pool' ? undefined : route.node || undefined;
      const adapter = lease ? lease.adapter : route.kind === 'pool' ? '' : route.adapter;
      const target = lease ? lease.target : route.kind === 'pool' ? '' : route.target;
      const session = sessions.acquire(node ?? '', adapter, target, deps.sessionId);
      try {
        handle = await deps.service.submitRun({
          node,
          adapter,
          target,
          providerId: lease?.providerId,
          sessionId: session.sessionId,
          workspace: spec.workspace,
          messages: spec.messages,
          tools: spec.tools,
          toolChoiceJson: spec.toolChoiceJson,
          params,
          timeoutMs: deps.timeoutMs > 0 ? deps.timeoutMs : undefined,
          metadata: spec.metadata,
          signal,
        });
      } catch (error) {
        session.release();
        lease?.release();
        throw error;
      }
      return new ActiveRunImpl(handle, lease, session, queueMs, submittedAt, signal, deps, cancelGraceMs);
    },
  };
}

class ActiveRunImpl implements ActiveRun {
  private ended = false;
  private finished = false;
  private readonly releaseOnce: () => void;
  readonly providerId: string | undefined;

  constructor(
    readonly handle: RunHandle,
    lease: Lease | undefined,
    session: SessionSlot,
    readonly queueMs: number,
    readonly submittedAt: number,
    private readonly signal: AbortSignal,
    private readonly deps: RunDispatcherDeps,
    private readonly cancelGraceMs: number,
  ) {
    this.releaseOnce = () => {
      session.release();
      lease?.release();
    };
    this.providerId = lease?.providerId;
    // Whatever happens to the consumer, a run that settles returns its slot.
    void handle.done.then(() => this.releaseOnce());
  }

  async *parts(): AsyncIterable<RunEventPart> {
    const iterator = this.handle.events[Symbol.asyncIterator]();
    // One abort listener for the whole run that settles whichever read is pending. (Promise.race against a
    // long-lived abort promise would pile up one reaction per part on it for the length of the stream.)
    let settlePending: ((value: typeof ABORTED) => void) | undefined;
    const onAbort = () => settlePending?.(ABORTED);
    this.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (this.signal.aborted) return;
        const pending = iterator.next();
        const next = await new Promise<IteratorResult<RunEventWithMeta> | typeof ABORTED>(
          (resolve, reject) => {
            settlePending = resolve;
            pending.then(resolve, reject);
          },
        );
        settlePending = undefined;
        if (next === ABORTED || next.done) return;
        const part = next.value.part;
        if (isTerminalPart(part)) this.ended = true;
        yield part;
        if (this.ended) return;
      }
    } finally {
      this.signal.removeEventListener('abort', onAbort);
      // Ends the service's event stream for this consumer; the run itself is cancelled in finish().
      iterator.return?.().catch((error: unknown) => {
        this.deps.logger.debug(
          { err: error, run_id: this.handle.runId },
          'closing a run event stream failed',
        );
      });
    }
  }

  finish(reason: string): void {
    if (this.finished) return;
    this.finished = true;
    if (this.ended) {
      this.releaseOnce();
      return;
    }
    this.handle.cancel(reason).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, run_id: this.handle.runId }, 'cancelling an abandoned run failed');
    });
    const timer = this.deps.clock.setTimeout(() => {
      this.deps.logger.warn(
        { run_id: this.handle.runId },
        'cancelled run did not settle in time; lease returned',
      );
      this.releaseOnce();
    }, this.cancelGraceMs);
    void this.handle.done.then(() => this.deps.clock.clearTimeout(timer));
  }
}

const ABORTED = Symbol('aborted');
