// The provider pool: which provider serves the next request for a `models[]` id, and how many may run at once.
//
// Dispatch rule (agent-contract/inner/edge-config-runtime-refresh.md): candidates are the enabled providers
// mapped by the model, on connected nodes, whose last health report is not unhealthy/unreachable. Among the
// candidates with in_flight < capacity the lowest in_flight wins; ties go to the lower `priority` number; ties
// again rotate round-robin. The rotation remembers the last provider id picked per model (not an index), so it
// survives config refreshes and node reconnects.
//
// Capacity is a guard: `acquire` returns a Lease whose `release()` decrements the provider's in_flight exactly
// once, however often it is called. In-flight counters are keyed by provider id and outlive config swaps, so a
// capacity cut or a disabled provider only affects new dispatches while running work drains.
//
// Queueing: with no free slot the caller waits in the model's FIFO queue. The queue holds at most the sum of
// `max_queue` of the model's enabled providers (full → `queue_full` at once) and a waiter gives up after the
// largest `queue_timeout_ms` among them (`queue_timeout`). A waiter whose signal aborts leaves the queue. Waiters
// are re-evaluated on every release, config change, node connect/disconnect (event bus) and health change
// (`notifyChanged()`, plus a light poll while anyone waits, because health reports arrive without an event).
import type { EdgeConfig, ModelConfig, ProviderConfig } from '@iop/config';
import type { EventBus, EventSubscription } from '../events/types.js';
import type { Logger } from '../logging.js';
import { silentLogger } from '../logging.js';
import type { NodeSummary } from '../service/types.js';
import { systemClock, type Clock, type ClockTimer } from './clock.js';
import { PoolError } from './errors.js';

/** The part of the edge config the pool reads. */
export type PoolConfig = Pick<EdgeConfig, 'models' | 'nodes'>;

/** A held capacity slot on one provider. */
export interface Lease {
  readonly model: string;
  readonly providerId: string;
  readonly nodeId: string;
  /** Adapter instance on the node that runs the provider. */
  readonly adapter: string;
  /** The provider's served model name: the run's target. */
  readonly target: string;
  /** Returns the slot. Idempotent: only the first call counts. */
  release(): void;
}

export interface AcquireOptions {
  /** Aborting while queued removes the caller from the queue (the promise rejects with `aborted`). */
  signal?: AbortSignal;
}

export type ProviderRunStatus = 'ready' | 'disabled' | 'offline';
export type ProviderHealthStatus = 'healthy' | 'unhealthy' | 'unreachable' | 'unknown' | 'disabled';

/** One provider as the admin API and the console `/providers` show it (field names match admin.proto). */
export interface ProviderStatus {
  providerId: string;
  nodeId: string;
  status: ProviderRunStatus;
  health: ProviderHealthStatus;
  /** 0 when disabled. */
  capacity: number;
  inFlight: number;
  /** Waiters in the queues of the models this provider serves (a waiter may count for several providers). */
  queued: number;
  servedModels: string[];
  priority: number;
}

/** Generation policy of a models[] entry, applied by surfaces before dispatch. */
export type ModelPolicy = Pick<
  ModelConfig,
  'default_max_tokens' | 'min_max_tokens' | 'default_thinking_token_budget'
>;

export interface ProviderPool {
  /** True when `model` is a models[] id (routed through the pool). */
  hasModel(model: string): boolean;
  /** The models[] entry of `model`, if any. */
  model(model: string): ModelConfig | undefined;
  /** models[] ids in config order. */
  modelIds(): string[];
  /** A slot on the best provider for `model`, waiting in its queue when all are busy. */
  acquire(model: string, options?: AcquireOptions): Promise<Lease>;
  /** Swaps models, providers, capacity, priority, queue policy and enabled flags at once. */
  applyConfig(config: PoolConfig): void;
  /** Re-evaluates waiters now (call after a health change or node (dis)connect the pool was not told about). */
  notifyChanged(): void;
  snapshot(): ProviderStatus[];
  /** Sum of in_flight over all providers and of waiters over all queues. */
  totals(): { inFlight: number; queued: number };
  /** Starts listening for node events (re-evaluation triggers). Idempotent. */
  start(): void;
  /** Rejects every waiter with `shutting_down` and stops timers; held leases may still be released. */
  close(): void;
}

export interface ProviderPoolOptions {
  config: PoolConfig;
  /** Connected nodes with their provider health (EdgeService.listNodes). */
  nodes: () => readonly NodeSummary[];
  /** Node connect/disconnect events re-evaluate waiters. */
  events?: EventBus;
  clock?: Clock;
  logger?: Logger;
  /** How often waiters are re-evaluated while any exist (health reports carry no event). Default 250 ms. */
  pollIntervalMs?: number;
}

interface ProviderEntry {
  config: ProviderConfig;
  nodeId: string;
  adapter: string;
}

interface ModelEntry {
  config: ModelConfig;
  /** [provider id, served model name] in config order: the round-robin order. */
  providers: [string, string][];
  queueLimit: number;
  queueTimeoutMs: number;
}

interface RoutingTable {
  models: Map<string, ModelEntry>;
  providers: Map<string, ProviderEntry>;
  /** Providers in config order (snapshot order). */
  providerOrder: string[];
}

interface Candidate {
  provider: ProviderEntry;
  target: string;
  inFlight: number;
  order: number;
}

interface Waiter {
  seq: number;
  model: string;
  resolve(lease: Lease): void;
  reject(error: PoolError): void;
  timer: ClockTimer | null;
  detachAbort: () => void;
}

const DEFAULT_POLL_INTERVAL_MS = 250;

export function createProviderPool(options: ProviderPoolOptions): ProviderPool {
  return new ProviderPoolImpl(options);
}

class ProviderPoolImpl implements ProviderPool {
  private routing: RoutingTable;
  private readonly inFlight = new Map<string, number>();
  private readonly queues = new Map<string, Waiter[]>();
  private readonly lastPicked = new Map<string, string>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly pollIntervalMs: number;
  private waiterSeq = 0;
  private waiting = 0;
  private pollTimer: ClockTimer | null = null;
  private subscription: EventSubscription | undefined;
  private started = false;
  private closed = false;

  constructor(private readonly options: ProviderPoolOptions) {
    this.routing = buildRouting(options.config);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  }

  hasModel(model: string): boolean {
    return this.routing.models.has(model);
  }

  model(model: string): ModelConfig | undefined {
    return this.routing.models.get(model)?.config;
  }

  modelIds(): string[] {
    return [...this.routing.models.keys()];
  }

  acquire(model: string, options: AcquireOptions = {}): Promise<Lease> {
    if (this.closed)
      return Promise.reject(new PoolError('shutting_down', 'the edge is shutting down', { model }));
    const entry = this.routing.models.get(model);
    if (!entry) {
      return Promise.reject(
        new PoolError('model_not_found', `The model '${model}' does not exist`, { model }),
      );
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(abortedError(model, signal));
    const queue = this.queues.get(model);
    // FIFO: a newcomer never overtakes someone already waiting for the same model.
    if (!queue || queue.length === 0) {
      const lease = this.tryDispatch(model, entry, this.connectedNodes());
      if (lease) return Promise.resolve(lease);
    }
    const candidates = this.candidates(entry, this.connectedNodes());
    if (candidates.length === 0) {
      return Promise.reject(
        new PoolError('no_provider_available', `No provider is available for model '${model}'`, {
          model,
          retryAfterSeconds: 1,
        }),
      );
    }
    const length = queue?.length ?? 0;
    if (length >= entry.queueLimit) {
      return Promise.reject(
        new PoolError(
          'queue_full',
          `All providers of model '${model}' are busy and its queue is full (${entry.queueLimit} waiting)`,
          { model, retryAfterSeconds: 1 },
        ),
      );
    }
    return this.enqueue(model, entry, signal);
  }

  applyConfig(config: PoolConfig): void {
    // Built completely before the swap, so no dispatch ever sees half of a config.
    this.routing = buildRouting(config);
    for (const [model, queue] of this.queues) {
      if (this.routing.models.has(model)) continue;
      for (const waiter of [...queue]) {
        this.removeWaiter(waiter);
        waiter.reject(
          new PoolError('model_not_found', `The model '${model}' was removed from the config`, { model }),
        );
      }
    }
    this.dropIdleCounters();
    this.drain();
  }

  notifyChanged(): void {
    this.drain();
  }

  snapshot(): ProviderStatus[] {
    const nodes = this.connectedNodes();
    const queuedByProvider = new Map<string, number>();
    for (const [model, queue] of this.queues) {
      const entry = this.routing.models.get(model);
      if (!entry || queue.length === 0) continue;
      for (const [providerId] of entry.providers) {
        queuedByProvider.set(providerId, (queuedByProvider.get(providerId) ?? 0) + queue.length);
      }
    }
    return this.routing.providerOrder.map((providerId) => {
      const provider = this.routing.providers.get(providerId) as ProviderEntry;
      const node = nodes.get(provider.nodeId);
      const enabled = provider.config.enabled;
      return {
        providerId,
        nodeId: provider.nodeId,
        status: !enabled ? 'disabled' : node ? 'ready' : 'offline',
        health: !enabled ? 'disabled' : node ? healthOf(node, providerId) : 'unknown',
        capacity: enabled ? provider.config.capacity : 0,
        inFlight: this.inFlight.get(providerId) ?? 0,
        queued: enabled ? (queuedByProvider.get(providerId) ?? 0) : 0,
        servedModels: [...provider.config.models],
        priority: provider.config.priority,
      };
    });
  }

  totals(): { inFlight: number; queued: number } {
    let inFlight = 0;
    for (const count of this.inFlight.values()) inFlight += count;
    return { inFlight, queued: this.waiting };
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    if (this.waiting > 0) this.watch();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const queue of [...this.queues.values()]) {
      for (const waiter of [...queue]) {
        this.removeWaiter(waiter);
        waiter.reject(new PoolError('shutting_down', 'the edge is shutting down', { model: waiter.model }));
      }
    }
    this.stopWatching();
  }

  private enqueue(model: string, entry: ModelEntry, signal: AbortSignal | undefined): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        seq: ++this.waiterSeq,
        model,
        resolve,
        reject,
        timer: null,
        detachAbort: () => undefined,
      };
      waiter.timer = this.clock.setTimeout(() => {
        if (!this.removeWaiter(waiter)) return;
        waiter.reject(
          new PoolError(
            'queue_timeout',
            `No provider of model '${model}' became free within ${entry.queueTimeoutMs} ms`,
            { model, retryAfterSeconds: 1 },
          ),
        );
      }, entry.queueTimeoutMs);
      if (signal) {
        const onAbort = () => {
          if (this.removeWaiter(waiter)) waiter.reject(abortedError(model, signal));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.detachAbort = () => signal.removeEventListener('abort', onAbort);
      }
      let queue = this.queues.get(model);
      if (!queue) {
        queue = [];
        this.queues.set(model, queue);
      }
      queue.push(waiter);
      this.waiting += 1;
      this.watch();
    });
  }

  /** Takes a waiter out of its queue and clears its timer and abort hook; false when it already left. */
  private removeWaiter(waiter: Waiter): boolean {
    const queue = this.queues.get(waiter.model);
    const index = queue ? queue.indexOf(waiter) : -1;
    if (!queue || index < 0) return false;
    queue.splice(index, 1);
    if (queue.length === 0) this.queues.delete(waiter.model);
    this.waiting -= 1;
    if (waiter.timer !== null) this.clock.clearTimeout(waiter.timer);
    waiter.detachAbort();
    if (this.waiting === 0) this.stopWatching();
    return true;
  }

  /** Hands free slots to waiters, oldest first across all models, until no head can be served. */
  private drain(): void {
    if (this.waiting === 0) return;
    const nodes = this.connectedNodes();
    for (;;) {
      const heads = [...this.queues.values()]
        .map((queue) => queue[0])
        .filter((waiter): waiter is Waiter => waiter !== undefined)
        .sort((a, b) => a.seq - b.seq);
      let served = false;
      for (const head of heads) {
        const entry = this.routing.models.get(head.model);
        if (!entry) continue;
        const lease = this.tryDispatch(head.model, entry, nodes);
        if (!lease) continue;
        this.removeWaiter(head);
        head.resolve(lease);
        served = true;
        break;
      }
      if (!served) return;
    }
  }

  private tryDispatch(model: string, entry: ModelEntry, nodes: Map<string, NodeSummary>): Lease | undefined {
    const free = this.candidates(entry, nodes).filter(
      (candidate) => candidate.inFlight < candidate.provider.config.capacity,
    );
    if (free.length === 0) return undefined;
    const chosen = this.pick(model, entry, free);
    return this.lease(model, chosen);
  }

  private candidates(entry: ModelEntry, nodes: Map<string, NodeSummary>): Candidate[] {
    const result: Candidate[] = [];
    entry.providers.forEach(([providerId, target], order) => {
      const provider = this.routing.providers.get(providerId);
      if (!provider || !provider.config.enabled) return;
      const node = nodes.get(provider.nodeId);
      if (!node) return;
      const health = healthOf(node, providerId);
      if (health === 'unhealthy' || health === 'unreachable') return;
      result.push({ provider, target, inFlight: this.inFlight.get(providerId) ?? 0, order });
    });
    return result;
  }

  /** Lowest in_flight, then lowest priority number, then the next provider after the last one picked. */
  private pick(model: string, entry: ModelEntry, free: Candidate[]): Candidate {
    let tied: Candidate[] = [];
    for (const candidate of free) {
      const best = tied[0];
      if (!best) {
        tied = [candidate];
        continue;
      }
      const byLoad = candidate.inFlight - best.inFlight;
      const byPriority = candidate.provider.config.priority - best.provider.config.priority;
      if (byLoad < 0 || (byLoad === 0 && byPriority < 0)) tied = [candidate];
      else if (byLoad === 0 && byPriority === 0) tied.push(candidate);
    }
    let chosen = tied[0];
    if (tied.length > 1) {
      const last = this.lastPicked.get(model);
      const lastOrder =
        last === undefined ? -1 : entry.providers.findIndex(([providerId]) => providerId === last);
      chosen = tied.find((candidate) => candidate.order > lastOrder) ?? chosen;
    }
    this.lastPicked.set(model, chosen.provider.config.id);
    return chosen;
  }

  private lease(model: string, candidate: Candidate): Lease {
    const providerId = candidate.provider.config.id;
    this.inFlight.set(providerId, candidate.inFlight + 1);
    let released = false;
    return {
      model,
      providerId,
      nodeId: candidate.provider.nodeId,
      adapter: candidate.provider.adapter,
      target: candidate.target,
      release: () => {
        if (released) return;
        released = true;
        const count = this.inFlight.get(providerId) ?? 0;
        if (count <= 0) {
          // Unreachable while leases are the only writers; logged rather than thrown so a release never fails.
          this.logger.error({ provider: providerId, model }, 'provider in_flight would go negative');
        } else if (count === 1 && !this.routing.providers.has(providerId)) {
          this.inFlight.delete(providerId);
        } else {
          this.inFlight.set(providerId, count - 1);
        }
        this.drain();
      },
    };
  }

  private connectedNodes(): Map<string, NodeSummary> {
    const map = new Map<string, NodeSummary>();
    for (const node of this.options.nodes()) map.set(node.nodeId, node);
    return map;
  }

  /** Counters of providers that left the config and have no run left. */
  private dropIdleCounters(): void {
    for (const [providerId, count] of this.inFlight) {
      if (count === 0 && !this.routing.providers.has(providerId)) this.inFlight.delete(providerId);
    }
  }

  /** While anyone waits: follow node events and poll (health changes arrive without an event). */
  private watch(): void {
    if (this.pollTimer === null) this.schedulePoll();
    const events = this.options.events;
    if (!events || this.subscription || !this.started) return;
    const subscription = events.subscribe();
    this.subscription = subscription;
    void (async () => {
      try {
        for await (const event of subscription) {
          if (event.type === 'node') this.drain();
        }
      } catch (error) {
        this.logger.warn({ err: error }, 'provider pool stopped following node events');
      }
    })();
  }

  private schedulePoll(): void {
    this.pollTimer = this.clock.setTimeout(() => {
      this.pollTimer = null;
      this.drain();
      if (this.waiting > 0 && !this.closed) this.schedulePoll();
    }, this.pollIntervalMs);
  }

  private stopWatching(): void {
    if (this.pollTimer !== null) {
      this.clock.clearTimeout(this.pollTimer);
      this.pollTimer = null;
    }
    this.subscription?.close();
    this.subscription = undefined;
  }
}

function buildRouting(config: PoolConfig): RoutingTable {
  const providers = new Map<string, ProviderEntry>();
  const providerOrder: string[] = [];
  for (const node of config.nodes) {
    for (const provider of node.providers) {
      providers.set(provider.id, {
        config: provider,
        nodeId: node.id,
        adapter: provider.adapter_instance ?? provider.adapter,
      });
      providerOrder.push(provider.id);
    }
  }
  const models = new Map<string, ModelEntry>();
  for (const model of config.models) {
    const mapped = Object.entries(model.providers);
    let queueLimit = 0;
    let queueTimeoutMs = 0;
    for (const [providerId] of mapped) {
      const provider = providers.get(providerId);
      if (!provider || !provider.config.enabled) continue;
      queueLimit += provider.config.max_queue;
      queueTimeoutMs = Math.max(queueTimeoutMs, provider.config.queue_timeout_ms);
    }
    models.set(model.id, { config: model, providers: mapped, queueLimit, queueTimeoutMs });
  }
  return { models, providers, providerOrder };
}

function healthOf(node: NodeSummary, providerId: string): ProviderHealthStatus {
  return node.providers.find((entry) => entry.providerId === providerId)?.health ?? 'unknown';
}

function abortedError(model: string, signal: AbortSignal): PoolError {
  return new PoolError(
    'aborted',
    `The request for model '${model}' was aborted while queued`,
    { model },
    {
      cause: signal.reason,
    },
  );
}
