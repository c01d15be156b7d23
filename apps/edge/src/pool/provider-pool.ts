// The provider pool: where the next run goes and how many may run at once — per provider and per node.
//
// Dispatch rule (agent-contract/inner/edge-config-runtime-refresh.md): candidates are the enabled providers
// mapped by the model, on connected nodes, whose last health report is not unhealthy/unreachable, whose circuit
// (passive health, circuit-breaker.ts) is not open — half-open admits one probe run — that the request does not
// exclude (a retry never returns to a provider that failed it), and whose node runs fewer than its
// `runtime.max_concurrency` runs. Among the candidates with in_flight < capacity the provider that served the run's
// affinity key last wins while it is free (affinity-table.ts); else the lowest in_flight; ties go to a provider
// whose node reports the served model resident (loaded; Ollama /api/ps, resident-models.ts), then to the lower
// `priority` number; ties again rotate round-robin. The rotation remembers the last provider id picked per model
// (not an index), so it survives config refreshes and node reconnects. A dispatch to a provider whose fresh report
// says the model is not loaded is a cold load (`onColdLoad`).
//
// Agent runs: a candidate whose served model is a CLI profile naming a `fabric_model` (fabric-model.ts) is preferred
// when its node has an enabled provider of that model that is healthy (no unhealthy/unreachable report, circuit not
// open) and below its capacity — the agent's model calls then stay on its node — after the affinity hit and before
// the order above; when no free candidate has one, the order above decides alone.
//
// Explicit routes (console, admin, A2A, OpenAI model_routes/fallback) name a node, adapter instance and target.
// They count against the node's max_concurrency too and, when a provider of that node has the same adapter
// instance and serves the target, against that provider's capacity — so every run the edge sends to a node is
// one the pool knows about, and a node never receives more runs than it accepts.
//
// Capacity is a guard: `acquire`/`acquireRoute` return a Lease whose `release()` decrements the provider's and
// the node's in_flight exactly once, however often it is called. Counters are keyed by provider id and node id
// and outlive config swaps, so a capacity cut or a disabled provider only affects new dispatches while running
// work drains.
//
// Conversation affinity (affinity-table.ts): a model run may carry an affinity key (already scoped by principal).
// Before the order above, the provider that served that key last is chosen when it is a free candidate; when it
// is a candidate but has no free slot the run waits for it up to the model's `affinity.max_wait_ms` (default 0)
// and then spills to the normal order. Every placement with a key records its provider, and counts
// `hit` / `miss` / `spill` (iop_affinity_total). Affinity only ever chooses among free candidates: it never
// breaks a provider's capacity or a node's max_concurrency.
//
// Queueing: with no free slot the caller waits — one queue per model, one per explicit route. What waits
// for a model's providers (in any queue those providers could serve) is at most the sum of their `max_queue`
// (full → `queue_full` at once) and a waiter gives up after the largest `queue_timeout_ms` among them
// (`queue_timeout`); a route uses its matching providers' settings, or the provider defaults when none matches. A waiter whose signal aborts leaves the queue.
// Within a queue, waiters are served by fair share between principals (fair-queue.ts: weighted round robin by
// the key's `weight`, FIFO within a key, `batch` keys after `interactive` ones); a newcomer never overtakes a
// waiter of its queue. Across queues, the next waiter of each queue competes interactive first, then oldest.
// Child runs (an agent's model calls, agent-contract/inner/agent-runs.md): a child takes its provider's capacity
// like any run but never a node's max_concurrency slot (its parent's slot covers it, and a node full of agents must
// not refuse the calls they wait on), and it waits in its model's child queue, which is served before the model's
// queue of other runs: a newcomer that is not a child never overtakes a waiting child.
// Waiters are re-evaluated on every release, config change, node connect/disconnect (event bus) and health
// change (`notifyChanged()`, plus a light poll while anyone waits, because health reports arrive without an
// event), and when a waiter's affinity wait ends.
import {
  DEFAULTS,
  type AdapterInstanceConfig,
  type AdapterType,
  type EdgeConfig,
  type KeyPriority,
  type ModelAffinityConfig,
  type ModelConfig,
  type ProviderConfig,
  type RoutingConfig,
} from '@iop/config';
import { systemClock, type Clock, type ClockTimer } from '../clock.js';
import type { EventBus, EventSubscription } from '../events/types.js';
import type { Logger } from '../logging.js';
import { silentLogger } from '../logging.js';
import type { ProviderHealthSummary } from '../present/node-summary.js';
import { AffinityTable } from './affinity-table.js';
import { fabricModelOf } from './fabric-model.js';
import type { CircuitGate } from './circuit-breaker.js';
import { PoolError } from './errors.js';
import { isResident, residentServedModels } from './resident-models.js';
import { FairQueue, type FlowSpec } from './fair-queue.js';
import type { ProviderHealthStatus, ProviderStatus } from '../present/provider-status.js';

/** The part of the edge config the pool reads (`routing` omitted = its defaults). */
export type PoolConfig = Pick<EdgeConfig, 'models' | 'nodes'> & {
  readonly routing?: Pick<RoutingConfig, 'affinity'>;
};

/** A connected node as the pool needs it: its providers' last health reports. */
export interface DirectoryNode {
  readonly providers: readonly ProviderHealthSummary[];
}

/** How the pool sees connected nodes (the node registry implements it); read on every dispatch, so cheap. */
export interface NodeDirectory {
  /** The connected node with that id, or undefined. */
  get(nodeId: string): DirectoryNode | undefined;
}

/** A held capacity slot: one run on one node, and on one provider when the run has one. */
export interface Lease {
  /** The models[] id for model dispatches; undefined for explicit routes. */
  readonly model: string | undefined;
  /** The provider whose capacity the run holds; undefined for a route no provider matches. */
  readonly providerId: string | undefined;
  readonly nodeId: string;
  /** Adapter instance on the node that runs it. */
  readonly adapter: string;
  /** The served model name / CLI target: the run's target. */
  readonly target: string;
  /**
   * The models[] entry the slot was granted under (model dispatches; undefined for explicit routes): the policy
   * in force when the run left the queue, so a run that waited across a live refresh gets the new one.
   */
  readonly policy: ModelPolicy | undefined;
  /** Returns the slot. Idempotent: only the first call counts. */
  release(): void;
}

/** An explicit route, after the node reference was resolved to a connected node id. */
export interface RouteDemand {
  nodeId: string;
  adapter: string;
  target: string;
}

export interface AcquireOptions {
  /** Aborting while queued removes the caller from the queue (the promise rejects with `aborted`). */
  signal?: AbortSignal;
  /** Providers this run must not be placed on (those that already failed it: a retry). */
  excludeProviders?: ReadonlySet<string>;
  /**
   * Conversation affinity key, already scoped by principal (placement/affinity-key.ts); model runs only, and only
   * while the model's `affinity.enabled`.
   */
  affinityKey?: string;
  /** Whose run it is, for fair share in the queue: the key id; omitted/'' = anonymous (one share together). */
  principalKey?: string;
  /** The key's share of the queue (1..1000, default 1). */
  weight?: number;
  /** `batch` waits while an `interactive` waiter of the same queue can be served (default interactive). */
  priority?: KeyPriority;
  /**
   * A child run (model runs only): no node max_concurrency slot, and served before the model's other waiters.
   */
  child?: boolean;
}

/** How a placement with an affinity key went: its provider, another one (none recorded), or a spill. */
export type AffinityResult = 'hit' | 'miss' | 'spill';

/** What the pool reports to metrics (the runtime passes the edge's counters; tests a recorder). */
export interface PoolMetrics {
  /** A model run with an affinity key was placed: `hit` on the key's provider, `spill` elsewhere while that
   * provider was a busy candidate, `miss` when the key had no (usable) entry. */
  affinity(result: AffinityResult): void;
}

/** Runs on one node against its `runtime.max_concurrency` (0 = unlimited). */
export interface NodeLoad {
  nodeId: string;
  inFlight: number;
  maxConcurrency: number;
}

/**
 * What placing a run needs of its models[] entry, as the live config has it: resolved once per run attempt by
 * the run supervisor and carried on the placement request (placement.ts, `modelPolicy`).
 */
export interface ModelPolicy {
  readonly config: ModelConfig;
  /**
   * `config.affinity` when affinity can choose anything: enabled, and the model's `providers` map names two or
   * more providers (anywhere in the fabric). Undefined otherwise, and then a run to the model needs no affinity
   * key at all (no hash, no table entry, no metric).
   */
  readonly affinity: ModelAffinityConfig | undefined;
}

export interface ProviderPool {
  /** True when `model` is a models[] id (routed through the pool). */
  hasModel(model: string): boolean;
  /** The models[] entry of `model`, if any. */
  model(model: string): ModelConfig | undefined;
  /** The entry's policy for placing a run (its config and usable affinity); the same object until a refresh. */
  modelPolicy(model: string): ModelPolicy | undefined;
  /** models[] ids in config order. */
  modelIds(): string[];
  /**
   * The adapter types (cli, ollama, openai_compat) of the enabled providers that serve `model`, without
   * duplicates: what a request for it may reach (the surfaces refuse fields one of them cannot take).
   */
  modelBackends(model: string): AdapterType[];
  /** A slot on the best provider for `model`, waiting in its queue when all are busy. */
  acquire(model: string, options?: AcquireOptions): Promise<Lease>;
  /** A slot for an explicit route on a connected node, waiting in the route's queue when it is full. */
  acquireRoute(route: RouteDemand, options?: AcquireOptions): Promise<Lease>;
  /** Swaps models, providers, capacity, priority, queue policy, node limits and enabled flags at once. */
  applyConfig(config: PoolConfig): void;
  /** The provider that served affinity key `key` last, on this edge or another (cluster placement reads it). */
  affinityProvider(key: string): string | undefined;
  /** Records that `providerId` serves `key` now: a run forwarded to the edge owning that provider (cluster). */
  recordAffinity(key: string, providerId: string): void;
  /** Re-evaluates waiters now (call after a health change or node (dis)connect the pool was not told about). */
  notifyChanged(): void;
  snapshot(): ProviderStatus[];
  /** Every node that has a limit in the config or runs something, with its load. */
  nodeLoads(): NodeLoad[];
  /** Sum of in_flight over all nodes and of waiters over all queues. */
  totals(): { inFlight: number; queued: number };
  /** Starts listening for node events (re-evaluation triggers). Idempotent. */
  start(): void;
  /** Rejects every waiter with `shutting_down` and stops timers; held leases may still be released. */
  close(): void;
}

export interface ProviderPoolOptions {
  config: PoolConfig;
  nodes: NodeDirectory;
  /** Node connect/disconnect events re-evaluate waiters. */
  events?: EventBus;
  clock?: Clock;
  logger?: Logger;
  /** How often waiters are re-evaluated while any exist (health reports carry no event). Default 250 ms. */
  pollIntervalMs?: number;
  /** A model run was dispatched to a provider whose node reported the model not loaded (counted as a metric). */
  onColdLoad?: (providerId: string) => void;
  metrics?: PoolMetrics;
  /** Passive health per provider (circuit-breaker.ts); none = every circuit closed. */
  circuits?: CircuitGate;
}

interface ProviderEntry {
  config: ProviderConfig;
  nodeId: string;
  adapter: string;
  /** Type of the adapter instance; undefined when the reference dangles (a disabled provider). */
  adapterType: AdapterType | undefined;
  /** The adapter instance (a cli instance's profiles name their `fabric_model`). */
  instance: AdapterInstanceConfig | undefined;
}

interface ModelEntry extends ModelPolicy {
  /** [provider id, served model name] in config order: the round-robin order. */
  providers: [string, string][];
  /** modelBackends(), computed when the config is applied. */
  backends: AdapterType[];
  /** Agent models: the `fabric_model` of each provider's CLI profile that names one; undefined when none does. */
  fabricModels: Map<string, string> | undefined;
  queueLimit: number;
  queueTimeoutMs: number;
}

interface RoutingTable {
  models: Map<string, ModelEntry>;
  providers: Map<string, ProviderEntry>;
  /** Providers in config order (snapshot order). */
  providerOrder: string[];
  /** runtime.max_concurrency per configured node. */
  nodeLimits: Map<string, number>;
}

interface Candidate {
  provider: ProviderEntry;
  target: string;
  inFlight: number;
  order: number;
  /** The served model is loaded on the provider's backend (undefined = unknown). */
  resident: boolean | undefined;
}

type Demand =
  | { kind: 'model'; model: string; exclude: ReadonlySet<string> | undefined; child: boolean }
  | ({ kind: 'route' } & RouteDemand);

/** A model run's affinity: its key, and until when (clock.now()) it waits for the key's provider. */
interface AffinityWish {
  key: string;
  until: number;
}

interface Waiter {
  seq: number;
  queueKey: string;
  demand: Demand;
  flow: FlowSpec;
  affinity: AffinityWish | undefined;
  resolve(lease: Lease): void;
  reject(error: PoolError): void;
  timer: ClockTimer | null;
  /** Wakes the queue when the waiter's affinity wait ends (it may then spill to another provider). */
  affinityTimer: ClockTimer | null;
  detachAbort: () => void;
}

/** One queue: a model's or an explicit route's waiters, in fair-share order. */
interface PoolQueue {
  demand: Demand;
  waiters: FairQueue<Waiter>;
}

/** A dispatch attempt: a lease, `hold` (this waiter waits for its affine provider; others may go), or none. */
type Attempt = Lease | 'hold' | undefined;

const DEFAULT_POLL_INTERVAL_MS = 250;

export function createProviderPool(options: ProviderPoolOptions): ProviderPool {
  return new ProviderPoolImpl(options);
}

class ProviderPoolImpl implements ProviderPool {
  private routing: RoutingTable;
  private readonly providerInFlight = new Map<string, number>();
  private readonly nodeInFlight = new Map<string, number>();
  /** Child runs holding capacity (they hold no node slot: counted here for totals()). */
  private childInFlight = 0;
  private readonly queues = new Map<string, PoolQueue>();
  private readonly affinity: AffinityTable;
  private readonly lastPicked = new Map<string, string>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly pollIntervalMs: number;
  private waiterSeq = 0;
  private waiting = 0;
  /** Waiters in child queues (0 = no child queue to look at). */
  private childWaiting = 0;
  private pollTimer: ClockTimer | null = null;
  private subscription: EventSubscription | undefined;
  private started = false;
  private closed = false;

  constructor(private readonly options: ProviderPoolOptions) {
    this.routing = buildRouting(options.config);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    const affinity = routingOf(options.config).affinity;
    this.affinity = new AffinityTable({
      maxEntries: affinity.max_entries,
      ttlMs: affinity.ttl_ms,
      clock: this.clock,
    });
  }

  hasModel(model: string): boolean {
    return this.routing.models.has(model);
  }

  model(model: string): ModelConfig | undefined {
    return this.routing.models.get(model)?.config;
  }

  modelPolicy(model: string): ModelPolicy | undefined {
    return this.routing.models.get(model);
  }

  modelIds(): string[] {
    return [...this.routing.models.keys()];
  }

  modelBackends(model: string): AdapterType[] {
    return this.routing.models.get(model)?.backends ?? [];
  }

  acquire(model: string, options: AcquireOptions = {}): Promise<Lease> {
    const entry = this.routing.models.get(model);
    if (!entry && !this.closed) {
      return Promise.reject(
        new PoolError('model_not_found', `The model '${model}' does not exist`, { model }),
      );
    }
    return this.admit(
      { kind: 'model', model, exclude: options.excludeProviders, child: options.child === true },
      options,
    );
  }

  acquireRoute(route: RouteDemand, options: AcquireOptions = {}): Promise<Lease> {
    return this.admit({ kind: 'route', ...route }, options);
  }

  applyConfig(config: PoolConfig): void {
    // Built completely before the swap, so no dispatch ever sees half of a config.
    this.routing = buildRouting(config);
    const affinity = routingOf(config).affinity;
    this.affinity.resize(affinity.max_entries, affinity.ttl_ms);
    this.affinity.forgetProviders((providerId) => this.routing.providers.has(providerId));
    for (const [key, queue] of this.queues) {
      const demand = queue.demand;
      if (demand.kind !== 'model' || this.routing.models.has(demand.model)) continue;
      const model = demand.model;
      for (const waiter of queue.waiters.items()) {
        this.removeWaiter(waiter);
        waiter.reject(
          new PoolError('model_not_found', `The model '${model}' was removed from the config`, { model }),
        );
      }
      this.queues.delete(key);
    }
    this.dropIdleCounters();
    this.drain();
  }

  notifyChanged(): void {
    this.drain();
  }

  affinityProvider(key: string): string | undefined {
    return this.affinity.get(key);
  }

  recordAffinity(key: string, providerId: string): void {
    this.affinity.set(key, providerId);
  }

  snapshot(): ProviderStatus[] {
    const nodes = this.options.nodes;
    const queuedByProvider = new Map<string, number>();
    for (const queue of this.queues.values()) {
      const length = queue.waiters.length;
      if (length === 0) continue;
      for (const providerId of this.providersServing(queue.demand)) {
        queuedByProvider.set(providerId, (queuedByProvider.get(providerId) ?? 0) + length);
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
        health: !enabled ? 'disabled' : node ? this.health(node, providerId) : 'unknown',
        capacity: enabled ? provider.config.capacity : 0,
        inFlight: this.providerInFlight.get(providerId) ?? 0,
        queued: enabled ? (queuedByProvider.get(providerId) ?? 0) : 0,
        servedModels: [...provider.config.models],
        priority: provider.config.priority,
        ...residentStatus(node, providerId, provider.config.models),
      };
    });
  }

  nodeLoads(): NodeLoad[] {
    const ids = new Set([...this.routing.nodeLimits.keys(), ...this.nodeInFlight.keys()]);
    return [...ids].map((nodeId) => ({
      nodeId,
      inFlight: this.nodeInFlight.get(nodeId) ?? 0,
      maxConcurrency: this.nodeLimit(nodeId),
    }));
  }

  totals(): { inFlight: number; queued: number } {
    let inFlight = this.childInFlight;
    for (const count of this.nodeInFlight.values()) inFlight += count;
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
      for (const waiter of queue.waiters.items()) {
        this.removeWaiter(waiter);
        waiter.reject(shuttingDown(waiter.demand));
      }
    }
    this.stopWatching();
  }

  private admit(demand: Demand, options: AcquireOptions): Promise<Lease> {
    const signal = options.signal;
    if (this.closed) return Promise.reject(shuttingDown(demand));
    if (signal?.aborted) return Promise.reject(abortedError(demand, signal));
    const queueKey = queueKeyOf(demand);
    const queue = this.queues.get(queueKey);
    const nodes = this.options.nodes;
    const affinity = this.affinityWish(demand, options.affinityKey);
    // A newcomer never overtakes someone already waiting in the same queue (the queue's order decides who is
    // next). A free slot means the demand is servable, so the "can it ever be served" check only runs for those
    // about to wait.
    if ((!queue || queue.waiters.length === 0) && !this.childrenWait(demand)) {
      const attempt = this.tryDispatch(demand, nodes, affinity);
      if (attempt !== undefined && attempt !== 'hold') return Promise.resolve(attempt);
    }
    const blocked = this.blocked(demand, nodes);
    if (blocked) return Promise.reject(blocked);
    const { limit, timeoutMs } = this.queuePolicy(demand);
    if (this.waitingFor(demand, queue) >= limit) {
      return Promise.reject(
        new PoolError(
          'queue_full',
          `${describeDemand(demand)} is busy and its queue is full (${limit} waiting)`,
          {
            ...modelDetail(demand),
            retryAfterSeconds: 1,
          },
        ),
      );
    }
    const flow: FlowSpec = {
      principal: options.principalKey ?? '',
      weight: options.weight ?? DEFAULTS.key_weight,
      priority: options.priority ?? DEFAULTS.key_priority,
    };
    const waiting = this.enqueue(demand, queueKey, flow, affinity, timeoutMs, signal);
    // Where waiters may hold out for their affine provider (max_wait_ms > 0), a free slot can coexist with a
    // queue: the newcomer (or one ahead of it) may take it now.
    if (demand.kind === 'model' && this.holdsForAffinity(demand.model)) this.drain();
    return waiting;
  }

  /** A model demand that is not a child while children of the same model wait: it waits behind them. */
  private childrenWait(demand: Demand): boolean {
    if (demand.kind !== 'model' || demand.child || this.childWaiting === 0) return false;
    return (this.queues.get(childQueueKey(demand.model))?.waiters.length ?? 0) > 0;
  }

  private holdsForAffinity(model: string): boolean {
    const config = this.routing.models.get(model)?.config.affinity;
    return config !== undefined && config.enabled && config.max_wait_ms > 0;
  }

  /** The affinity a model demand carries (undefined: no key, a route, or affinity off for the model). */
  private affinityWish(demand: Demand, key: string | undefined): AffinityWish | undefined {
    if (key === undefined || key === '' || demand.kind !== 'model') return undefined;
    const config = this.routing.models.get(demand.model)?.config.affinity;
    if (!config?.enabled) return undefined;
    return { key, until: this.clock.now() + config.max_wait_ms };
  }

  private enqueue(
    demand: Demand,
    queueKey: string,
    flow: FlowSpec,
    affinity: AffinityWish | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        seq: ++this.waiterSeq,
        queueKey,
        demand,
        flow,
        affinity,
        resolve,
        reject,
        timer: null,
        affinityTimer: null,
        detachAbort: () => undefined,
      };
      waiter.timer = this.clock.setTimeout(() => {
        if (!this.removeWaiter(waiter)) return;
        waiter.reject(
          new PoolError(
            'queue_timeout',
            `No capacity for ${describeDemand(demand)} became free within ${timeoutMs} ms`,
            { ...modelDetail(demand), retryAfterSeconds: 1 },
          ),
        );
      }, timeoutMs);
      const holdMs = affinity ? affinity.until - this.clock.now() : 0;
      if (holdMs > 0) {
        waiter.affinityTimer = this.clock.setTimeout(() => {
          waiter.affinityTimer = null;
          this.drain();
        }, holdMs);
      }
      if (signal) {
        const onAbort = () => {
          if (this.removeWaiter(waiter)) waiter.reject(abortedError(demand, signal));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.detachAbort = () => signal.removeEventListener('abort', onAbort);
      }
      let queue = this.queues.get(queueKey);
      if (!queue) {
        queue = { demand, waiters: new FairQueue<Waiter>() };
        this.queues.set(queueKey, queue);
      }
      queue.waiters.push(waiter, waiter.seq, flow);
      this.waiting += 1;
      if (isChild(demand)) this.childWaiting += 1;
      this.watch();
    });
  }

  /**
   * Takes a waiter out of its queue and clears its timers and abort hook; false when it already left. `served`
   * charges its principal's share (fair-queue.ts); leaving (abort, timeout, shutdown) does not.
   */
  private removeWaiter(waiter: Waiter, served = false): boolean {
    const queue = this.queues.get(waiter.queueKey);
    if (!queue) return false;
    if (served) queue.waiters.take(waiter);
    else if (!queue.waiters.remove(waiter)) return false;
    if (queue.waiters.length === 0) this.queues.delete(waiter.queueKey);
    this.waiting -= 1;
    if (isChild(waiter.demand)) this.childWaiting -= 1;
    if (waiter.timer !== null) this.clock.clearTimeout(waiter.timer);
    if (waiter.affinityTimer !== null) this.clock.clearTimeout(waiter.affinityTimer);
    waiter.detachAbort();
    if (this.waiting === 0) this.stopWatching();
    return true;
  }

  /**
   * Hands free slots to waiters until none can be served. Each queue offers its waiters in fair-share order;
   * across queues the next waiter of each competes, interactive before batch, then oldest first.
   */
  private drain(): void {
    if (this.waiting === 0) return;
    const nodes = this.options.nodes;
    for (;;) {
      const heads: { queue: PoolQueue; head: Waiter }[] = [];
      for (const queue of this.queues.values()) {
        const head = queue.waiters.head();
        if (head !== undefined) heads.push({ queue, head });
      }
      heads.sort(
        (a, b) =>
          childRank(a.queue.demand) - childRank(b.queue.demand) ||
          classRank(a.head.flow.priority) - classRank(b.head.flow.priority) ||
          a.head.seq - b.head.seq,
      );
      let served = false;
      for (const { queue } of heads) {
        for (const waiter of queue.waiters.order()) {
          const attempt = this.tryDispatch(waiter.demand, nodes, waiter.affinity);
          // No slot for this queue's demand: nobody behind this waiter can be served either.
          if (attempt === undefined) break;
          // It holds out for its affine provider: the next one in order may take another free slot.
          if (attempt === 'hold') continue;
          this.removeWaiter(waiter, true);
          waiter.resolve(attempt);
          served = true;
          break;
        }
        if (served) break;
      }
      if (!served) return;
    }
  }

  /**
   * A lease when a slot is free now; undefined = wait; `hold` = a slot is free, but not on the provider this
   * run's affinity waits for. Waiters stay queued through a node's reconnect or a health flap (until their queue
   * timeout); only admission refuses demands nothing could serve (see `blocked`).
   */
  private tryDispatch(demand: Demand, nodes: NodeDirectory, affinity?: AffinityWish): Attempt {
    if (demand.kind === 'model') {
      const entry = this.routing.models.get(demand.model);
      if (!entry) return undefined;
      const candidates = this.candidates(entry, nodes, demand.exclude);
      const child = demand.child;
      const free = candidates.filter(
        (candidate) =>
          candidate.inFlight < candidate.provider.config.capacity &&
          (child || this.nodeHasRoom(candidate.provider.nodeId)),
      );
      if (free.length === 0) return undefined;
      let result: AffinityResult = 'miss';
      if (affinity !== undefined) {
        const preferred = this.affinity.get(affinity.key);
        if (preferred !== undefined) {
          const hit = free.find((candidate) => candidate.provider.config.id === preferred);
          if (hit) {
            this.options.metrics?.affinity('hit');
            this.affinity.set(affinity.key, preferred);
            return this.lease(demand.model, entry, hit.provider.nodeId, hit.provider, hit.target, child);
          }
          // Its provider is busy (still a candidate): wait for it until the wait ends, then spill.
          if (candidates.some((candidate) => candidate.provider.config.id === preferred)) {
            if (this.clock.now() < affinity.until) return 'hold';
            result = 'spill';
          }
        }
      }
      const chosen = this.pick(
        demand.model,
        entry,
        entry.fabricModels ? this.nearFabricModel(entry.fabricModels, free, nodes) : free,
      );
      if (chosen.resident === false) this.options.onColdLoad?.(chosen.provider.config.id);
      if (affinity !== undefined) {
        this.options.metrics?.affinity(result);
        this.affinity.set(affinity.key, chosen.provider.config.id);
      }
      return this.lease(demand.model, entry, chosen.provider.nodeId, chosen.provider, chosen.target, child);
    }
    if (nodes.get(demand.nodeId) === undefined || !this.nodeHasRoom(demand.nodeId)) return undefined;
    const matching = this.routeProviders(demand);
    if (matching.length === 0)
      return this.lease(undefined, undefined, demand.nodeId, undefined, demand.target);
    let best: ProviderEntry | undefined;
    let bestLoad = Infinity;
    for (const provider of matching) {
      const load = this.providerInFlight.get(provider.config.id) ?? 0;
      if (load >= provider.config.capacity) continue;
      if (
        load < bestLoad ||
        (load === bestLoad && best !== undefined && provider.config.priority < best.config.priority)
      ) {
        best = provider;
        bestLoad = load;
      }
    }
    return best ? this.lease(undefined, undefined, demand.nodeId, best, demand.target) : undefined;
  }

  /**
   * An agent model's free candidates whose node has room on a provider of the agent's fabric_model; all of them
   * when none has.
   */
  private nearFabricModel(
    fabricModels: Map<string, string>,
    free: Candidate[],
    nodes: NodeDirectory,
  ): Candidate[] {
    const near = free.filter((candidate) => {
      const fabricModel = fabricModels.get(candidate.provider.config.id);
      return fabricModel !== undefined && this.hasRoomOn(fabricModel, candidate.provider.nodeId, nodes);
    });
    return near.length > 0 ? near : free;
  }

  /** True when an enabled, healthy provider of `model` on node `nodeId` is below its capacity. */
  private hasRoomOn(model: string, nodeId: string, nodes: NodeDirectory): boolean {
    const entry = this.routing.models.get(model);
    const node = nodes.get(nodeId);
    if (!entry || !node) return false;
    for (const [providerId] of entry.providers) {
      const provider = this.routing.providers.get(providerId);
      if (!provider || !provider.config.enabled || provider.nodeId !== nodeId) continue;
      const health = healthOf(node, providerId);
      if (health === 'unhealthy' || health === 'unreachable') continue;
      if (this.options.circuits?.state(providerId) === 'open') continue;
      if ((this.providerInFlight.get(providerId) ?? 0) < provider.config.capacity) return true;
    }
    return false;
  }

  /** Why a demand cannot be served at all right now (as opposed to "wait for a slot"); undefined = it can wait. */
  private blocked(demand: Demand, nodes: NodeDirectory): PoolError | undefined {
    if (demand.kind === 'route') {
      if (nodes.get(demand.nodeId) !== undefined) return undefined;
      return new PoolError('node_unavailable', `node '${demand.nodeId}' is not connected`, {
        retryAfterSeconds: 1,
      });
    }
    const entry = this.routing.models.get(demand.model);
    if (!entry) {
      return new PoolError('model_not_found', `The model '${demand.model}' does not exist`, {
        model: demand.model,
      });
    }
    if (this.candidates(entry, nodes, demand.exclude, true).length > 0) return undefined;
    return new PoolError('no_provider_available', `No provider is available for model '${demand.model}'`, {
      model: demand.model,
      retryAfterSeconds: 1,
    });
  }

  /**
   * The providers that may take the run now, or — `eventually` — once a slot frees: a half-open circuit busy
   * with its probe run is a reason to wait, not to refuse.
   */
  private candidates(
    entry: ModelEntry,
    nodes: NodeDirectory,
    exclude: ReadonlySet<string> | undefined,
    eventually = false,
  ): Candidate[] {
    const result: Candidate[] = [];
    const circuits = this.options.circuits;
    entry.providers.forEach(([providerId, target], order) => {
      const provider = this.routing.providers.get(providerId);
      if (!provider || !provider.config.enabled) return;
      if (exclude?.has(providerId)) return;
      const node = nodes.get(provider.nodeId);
      if (!node) return;
      const health = healthOf(node, providerId);
      if (health === 'unhealthy' || health === 'unreachable') return;
      if (circuits && !(eventually ? circuits.state(providerId) !== 'open' : circuits.admits(providerId)))
        return;
      result.push({
        provider,
        target,
        inFlight: this.providerInFlight.get(providerId) ?? 0,
        order,
        resident: isResident(node, providerId, target),
      });
    });
    return result;
  }

  /** Enabled providers of the route's node with the route's adapter instance that serve its target. */
  private routeProviders(route: RouteDemand): ProviderEntry[] {
    const result: ProviderEntry[] = [];
    for (const provider of this.routing.providers.values()) {
      if (
        provider.nodeId === route.nodeId &&
        provider.adapter === route.adapter &&
        provider.config.enabled &&
        provider.config.models.includes(route.target)
      ) {
        result.push(provider);
      }
    }
    return result;
  }

  private providersServing(demand: Demand): string[] {
    if (demand.kind === 'route') return this.routeProviders(demand).map((provider) => provider.config.id);
    const entry = this.routing.models.get(demand.model);
    return entry ? entry.providers.map(([providerId]) => providerId) : [];
  }

  /**
   * Waiters that compete for the providers of `demand`: its own queue plus every other queue (a model's, an
   * explicit route's) that one of the same providers could serve. `max_queue` bounds what waits for a provider,
   * whichever door the waiters came through.
   */
  private waitingFor(demand: Demand, ownQueue: PoolQueue | undefined): number {
    const providers = new Set(this.providersServing(demand));
    let count = ownQueue?.waiters.length ?? 0;
    if (providers.size === 0) return count;
    for (const queue of this.queues.values()) {
      if (queue === ownQueue || queue.waiters.length === 0) continue;
      if (this.providersServing(queue.demand).some((providerId) => providers.has(providerId)))
        count += queue.waiters.length;
    }
    return count;
  }

  private queuePolicy(demand: Demand): { limit: number; timeoutMs: number } {
    if (demand.kind === 'model') {
      const entry = this.routing.models.get(demand.model) as ModelEntry;
      return { limit: entry.queueLimit, timeoutMs: entry.queueTimeoutMs };
    }
    const matching = this.routeProviders(demand);
    if (matching.length === 0) return { limit: DEFAULTS.max_queue, timeoutMs: DEFAULTS.queue_timeout_ms };
    return {
      limit: matching.reduce((sum, provider) => sum + provider.config.max_queue, 0),
      timeoutMs: Math.max(...matching.map((provider) => provider.config.queue_timeout_ms)),
    };
  }

  /** The one health state: an unhealthy probe report first, then an open or half-open circuit, then the report. */
  private health(node: DirectoryNode, providerId: string): ProviderHealthStatus {
    const reported = healthOf(node, providerId);
    if (reported === 'unhealthy' || reported === 'unreachable') return reported;
    const circuit = this.options.circuits?.state(providerId) ?? 'closed';
    return circuit === 'closed' ? reported : circuit;
  }

  private nodeLimit(nodeId: string): number {
    return this.routing.nodeLimits.get(nodeId) ?? DEFAULTS.max_concurrency;
  }

  private nodeHasRoom(nodeId: string): boolean {
    const limit = this.nodeLimit(nodeId);
    return limit === 0 || (this.nodeInFlight.get(nodeId) ?? 0) < limit;
  }

  /**
   * Lowest in_flight, then the model resident, then lowest priority number, then the next provider after the
   * last one picked.
   */
  private pick(model: string, entry: ModelEntry, free: Candidate[]): Candidate {
    let tied: Candidate[] = [];
    for (const candidate of free) {
      const best = tied[0];
      if (!best) {
        tied = [candidate];
        continue;
      }
      const byLoad = candidate.inFlight - best.inFlight;
      const byResident = residentRank(candidate) - residentRank(best);
      const byPriority = candidate.provider.config.priority - best.provider.config.priority;
      const order = byLoad || byResident || byPriority;
      if (order < 0) tied = [candidate];
      else if (order === 0) tied.push(candidate);
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

  private lease(
    model: string | undefined,
    policy: ModelPolicy | undefined,
    nodeId: string,
    provider: ProviderEntry | undefined,
    target: string,
    /** A child run: no node slot. */
    child = false,
  ): Lease {
    const providerId = provider?.config.id;
    if (providerId !== undefined) increment(this.providerInFlight, providerId);
    if (child) this.childInFlight += 1;
    else increment(this.nodeInFlight, nodeId);
    const circuits = this.options.circuits;
    // Model dispatches only: explicit routes name their place and are not gated by the circuit.
    const probe =
      model !== undefined && providerId !== undefined && circuits ? circuits.leased(providerId) : false;
    let released = false;
    return {
      model,
      policy,
      providerId,
      nodeId,
      adapter: provider ? provider.adapter : '',
      target,
      release: () => {
        if (released) return;
        released = true;
        if (providerId !== undefined) this.decrement(this.providerInFlight, providerId, 'provider');
        if (child) this.childInFlight -= 1;
        else this.decrement(this.nodeInFlight, nodeId, 'node');
        if (probe && providerId !== undefined) circuits?.released(providerId);
        this.drain();
      },
    };
  }

  private decrement(counters: Map<string, number>, key: string, kind: 'provider' | 'node'): void {
    const count = counters.get(key) ?? 0;
    if (count <= 0) {
      // Unreachable while leases are the only writers; logged rather than thrown so a release never fails.
      this.logger.error({ [kind]: key }, `${kind} in_flight would go negative`);
      return;
    }
    if (count === 1) counters.delete(key);
    else counters.set(key, count - 1);
  }

  /** Counters of providers that left the config and have no run left. */
  private dropIdleCounters(): void {
    for (const [providerId, count] of this.providerInFlight) {
      if (count === 0 && !this.routing.providers.has(providerId)) this.providerInFlight.delete(providerId);
    }
  }

  /** While anyone waits: follow node events and poll (health changes arrive without an event). */
  private watch(): void {
    if (this.pollTimer === null) this.schedulePoll();
    const events = this.options.events;
    if (!events || this.subscription || !this.started) return;
    // Only node events wake waiters: run events (several per run, and plenty while requests queue) must not be
    // queued and iterated here for nothing.
    const subscription = events.subscribe({ filter: (event) => event.type === 'node' });
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
  const nodeLimits = new Map<string, number>();
  for (const node of config.nodes) {
    nodeLimits.set(node.id, node.runtime.max_concurrency);
    for (const provider of node.providers) {
      const instance = node.adapters.instances.find((entry) => entry.name === provider.adapter_instance);
      providers.set(provider.id, {
        config: provider,
        nodeId: node.id,
        adapter: provider.adapter_instance ?? provider.adapter,
        adapterType: instance?.type,
        instance,
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
    const backends = new Set<AdapterType>();
    for (const [providerId] of mapped) {
      const provider = providers.get(providerId);
      if (provider?.config.enabled && provider.adapterType) backends.add(provider.adapterType);
    }
    let fabricModels: Map<string, string> | undefined;
    for (const [providerId, target] of mapped) {
      const fabricModel = fabricModelOf(providers.get(providerId)?.instance, target);
      if (fabricModel !== undefined) (fabricModels ??= new Map()).set(providerId, fabricModel);
    }
    // One provider (or none): affinity has nothing to choose between, on this edge or any other.
    const affinity = model.affinity.enabled && mapped.length >= 2 ? model.affinity : undefined;
    models.set(model.id, {
      config: model,
      providers: mapped,
      affinity,
      backends: Object.freeze([...backends]) as AdapterType[],
      fabricModels,
      queueLimit,
      queueTimeoutMs,
    });
  }
  return { models, providers, providerOrder, nodeLimits };
}

/** The routing section, with its defaults when a caller's config has none (tests, older callers). */
function routingOf(config: PoolConfig): Pick<RoutingConfig, 'affinity'> {
  return (
    config.routing ?? {
      affinity: { max_entries: DEFAULTS.affinity_max_entries, ttl_ms: DEFAULTS.affinity_ttl_ms },
    }
  );
}

function classRank(priority: KeyPriority): number {
  return priority === 'interactive' ? 0 : 1;
}

function increment(counters: Map<string, number>, key: string): void {
  counters.set(key, (counters.get(key) ?? 0) + 1);
}

/** 0 when the model is known loaded on the candidate, 1 otherwise (not loaded and unknown rank alike). */
function residentRank(candidate: Candidate): number {
  return candidate.resident === true ? 0 : 1;
}

function residentStatus(
  node: DirectoryNode | undefined,
  providerId: string,
  served: readonly string[],
): Pick<ProviderStatus, 'residentModels' | 'residentState'> {
  const resident = node?.providers.find((entry) => entry.providerId === providerId)?.resident;
  return {
    residentModels: residentServedModels(resident, served),
    residentState: resident?.state ?? 'unknown',
  };
}

function healthOf(node: DirectoryNode, providerId: string): ProviderHealthStatus {
  return node.providers.find((entry) => entry.providerId === providerId)?.health ?? 'unknown';
}

function queueKeyOf(demand: Demand): string {
  if (demand.kind === 'model')
    return demand.child ? childQueueKey(demand.model) : `model\u0000${demand.model}`;
  return `route\u0000${demand.nodeId}\u0000${demand.adapter}\u0000${demand.target}`;
}

function childQueueKey(model: string): string {
  return `child\u0000${model}`;
}

function isChild(demand: Demand): boolean {
  return demand.kind === 'model' && demand.child;
}

/** Child queues are offered free slots first. */
function childRank(demand: Demand): number {
  return isChild(demand) ? 0 : 1;
}

function describeDemand(demand: Demand): string {
  return demand.kind === 'model'
    ? `model '${demand.model}'`
    : `node '${demand.nodeId}' (adapter '${demand.adapter}', target '${demand.target}')`;
}

function modelDetail(demand: Demand): { model?: string } {
  return demand.kind === 'model' ? { model: demand.model } : {};
}

function shuttingDown(demand: Demand): PoolError {
  return new PoolError('shutting_down', 'the edge is shutting down', modelDetail(demand));
}

function abortedError(demand: Demand, signal: AbortSignal): PoolError {
  return new PoolError(
    'aborted',
    `The request for ${describeDemand(demand)} was aborted while queued`,
    modelDetail(demand),
    { cause: signal.reason },
  );
}
