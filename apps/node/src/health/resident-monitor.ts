// Learns which models each backend holds loaded in memory ("resident"; Ollama `GET /api/ps`) so the edge can
// prefer a provider where the model is already loaded. Only adapters implementing `residentModels` are asked.
//
// When: every `intervalMs` (the payload's `resident_poll_interval_ms`, default 5000; 0 = never, and nothing is
// reported), and soon after each run on an instance ends (a run may have loaded or evicted a model). Run ends are
// coalesced per instance: at most one ask in flight, at most one more queued behind it, and asks at least
// `minGapMs` apart, so a burst of finished runs costs one or two asks, not one each.
//
// A failing ask never throws and never touches health or runs: the last list is kept, and once its last
// successful answer is older than `staleAfterMs` (default 3 × the interval) it is reported `stale`, which the edge
// shows but does not place by. `onChange` fires when an instance's list or state changes (the health monitor then
// sends a report).
import type { Logger } from '@iop/logging';
import type { Adapter } from '../adapters/adapter.js';
import type { Clock, ClockTimer } from '@iop/clock';

/** Default of `nodes[].runtime.resident_poll_interval_ms` when the payload does not carry one (an older edge). */
export const DEFAULT_RESIDENT_POLL_INTERVAL_MS = 5000;

export type ResidentFreshness = 'fresh' | 'stale';

export interface ResidentSnapshot {
  /** Sorted model names as the backend spells them. */
  readonly models: readonly string[];
  readonly state: ResidentFreshness;
}

export interface ResidentMonitorDeps {
  adapters: { list(): readonly Adapter[] };
  /** Poll interval, read each round (refreshes change it); 0 = residency off. */
  intervalMs: () => number;
  clock: Clock;
  logger: Logger;
  /** An instance's list or state changed. */
  onChange: () => void;
  /** Minimum time between two asks of one instance triggered by run ends. Default 250 ms. */
  minGapMs?: number;
  /** Age of the last answer after which the list is `stale`. Default 3 × the interval. */
  staleAfterMs?: number;
  /** Bound of one ask. Default 2000 ms. */
  timeoutMs?: number;
}

interface InstanceState {
  models: string[];
  /** Clock time of the last successful answer; undefined = never answered. */
  answeredAt: number | undefined;
  /** What `onChange` last announced (fingerprint of models and state). */
  announced: string;
  startedAt: number;
  inFlight: Promise<void> | undefined;
  /** A run ended while an ask was in flight: ask once more after it. */
  again: boolean;
  gapTimer: ClockTimer | undefined;
}

const DEFAULT_MIN_GAP_MS = 250;
const DEFAULT_TIMEOUT_MS = 2000;

export class ResidentMonitor {
  readonly #deps: ResidentMonitorDeps;
  readonly #instances = new Map<string, InstanceState>();
  readonly #controller = new AbortController();
  #timer: ClockTimer | undefined;
  #running = false;

  constructor(deps: ResidentMonitorDeps) {
    this.#deps = deps;
  }

  /** Starts the periodic rounds (the first at once). Idempotent; a no-op after stop. */
  start(): void {
    if (this.#running || this.#controller.signal.aborted) return;
    this.#running = true;
    this.#schedule(0);
  }

  /** Stops the rounds and aborts asks in flight. Idempotent. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#deps.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#controller.abort('resident monitor stopped');
    const pending: Promise<void>[] = [];
    for (const state of this.#instances.values()) {
      this.#deps.clock.clearTimeout(state.gapTimer);
      state.gapTimer = undefined;
      if (state.inFlight) pending.push(state.inFlight);
    }
    await Promise.all(pending);
  }

  /** What is known about `adapterName`: undefined = unknown (never answered, off, or not such an adapter). */
  snapshot(adapterName: string): ResidentSnapshot | undefined {
    if (this.#deps.intervalMs() <= 0) return undefined;
    const state = this.#instances.get(adapterName);
    if (!state || state.answeredAt === undefined) return undefined;
    return { models: state.models, state: this.#stateOf(state) };
  }

  /** A run on `adapterName` ended: ask again soon (coalesced; see the header). */
  runEnded(adapterName: string): void {
    if (!this.#running || this.#deps.intervalMs() <= 0) return;
    const adapter = this.#residentAdapters().find((candidate) => candidate.name === adapterName);
    if (!adapter) return;
    const state = this.#stateFor(adapterName);
    if (state.inFlight) {
      state.again = true;
      return;
    }
    this.#askSoon(adapter, state);
  }

  /** Asks every instance now (a round); resolves when all answered or failed. */
  async refreshAll(): Promise<void> {
    const adapters = this.#residentAdapters();
    const names = new Set(adapters.map((adapter) => adapter.name));
    for (const [name, state] of this.#instances) {
      if (names.has(name)) continue;
      this.#deps.clock.clearTimeout(state.gapTimer);
      this.#instances.delete(name);
    }
    await Promise.all(
      adapters.map((adapter) => {
        const state = this.#stateFor(adapter.name);
        if (state.inFlight) return state.inFlight;
        // Asked now: a run end's ask waiting for its gap is answered by this one.
        this.#deps.clock.clearTimeout(state.gapTimer);
        state.gapTimer = undefined;
        return this.#ask(adapter, state);
      }),
    );
  }

  #schedule(delayMs: number): void {
    this.#timer = this.#deps.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.refreshAll().finally(() => {
        if (!this.#running || this.#timer) return;
        const interval = this.#deps.intervalMs();
        // Off (0): look again at the default pace, so a refresh turning it on takes effect without a restart.
        this.#schedule(interval > 0 ? interval : DEFAULT_RESIDENT_POLL_INTERVAL_MS);
      });
    }, delayMs);
  }

  #residentAdapters(): Adapter[] {
    if (this.#deps.intervalMs() <= 0) return [];
    return this.#deps.adapters.list().filter((adapter) => typeof adapter.residentModels === 'function');
  }

  #stateFor(name: string): InstanceState {
    let state = this.#instances.get(name);
    if (!state) {
      state = {
        models: [],
        answeredAt: undefined,
        announced: '',
        startedAt: Number.NEGATIVE_INFINITY,
        inFlight: undefined,
        again: false,
        gapTimer: undefined,
      };
      this.#instances.set(name, state);
    }
    return state;
  }

  #askSoon(adapter: Adapter, state: InstanceState): void {
    if (state.gapTimer || state.inFlight || !this.#running) return;
    const gap = this.#deps.minGapMs ?? DEFAULT_MIN_GAP_MS;
    const wait = state.startedAt + gap - this.#deps.clock.now();
    if (wait <= 0) {
      void this.#ask(adapter, state);
      return;
    }
    state.gapTimer = this.#deps.clock.setTimeout(() => {
      state.gapTimer = undefined;
      if (this.#instances.get(adapter.name) === state) void this.#ask(adapter, state);
    }, wait);
  }

  #ask(adapter: Adapter, state: InstanceState): Promise<void> {
    state.startedAt = this.#deps.clock.now();
    state.again = false;
    const ask = this.#askOnce(adapter, state).finally(() => {
      state.inFlight = undefined;
      if (state.again && this.#running && this.#instances.get(adapter.name) === state) {
        state.again = false;
        this.#askSoon(adapter, state);
      }
    });
    state.inFlight = ask;
    return ask;
  }

  async #askOnce(adapter: Adapter, state: InstanceState): Promise<void> {
    const { clock, logger } = this.#deps;
    const timeoutMs = this.#deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const controller = new AbortController();
    const onStop = () => controller.abort('resident monitor stopped');
    this.#controller.signal.addEventListener('abort', onStop, { once: true });
    let timer: ClockTimer | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = clock.setTimeout(() => {
        controller.abort('resident models ask timed out');
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      const asking = adapter.residentModels?.(controller.signal) ?? Promise.resolve([]);
      const models = await Promise.race([asking, timeout]);
      if (this.#controller.signal.aborted) return;
      state.models = [...new Set(models)].sort();
      state.answeredAt = clock.now();
    } catch (error) {
      if (this.#controller.signal.aborted) return;
      logger.debug(
        { adapter: adapter.name, error: error instanceof Error ? error.message : String(error) },
        'resident models ask failed; keeping the last list',
      );
    } finally {
      clock.clearTimeout(timer);
      this.#controller.signal.removeEventListener('abort', onStop);
    }
    this.#announce(adapter.name, state);
  }

  #stateOf(state: InstanceState): ResidentFreshness {
    const staleAfter = this.#deps.staleAfterMs ?? 3 * Math.max(1, this.#deps.intervalMs());
    return state.answeredAt !== undefined && this.#deps.clock.now() - state.answeredAt <= staleAfter
      ? 'fresh'
      : 'stale';
  }

  #announce(adapterName: string, state: InstanceState): void {
    if (state.answeredAt === undefined) return;
    const current = this.#stateOf(state);
    const fingerprint = `${current}\u0000${state.models.join('\u0000')}`;
    if (fingerprint === state.announced) return;
    const previous = state.announced.split('\u0000')[0];
    state.announced = fingerprint;
    // Once per change of state, not per failed ask (those are at debug).
    if (current === 'stale') {
      this.#deps.logger.info(
        { adapter: adapterName, lastAnswerMs: this.#deps.clock.now() - state.answeredAt },
        `resident model list of ${adapterName} is stale: /api/ps has not answered; kept, not placed by`,
      );
    } else if (previous === 'stale') {
      this.#deps.logger.info(
        { adapter: adapterName },
        `resident model list of ${adapterName} is fresh again`,
      );
    }
    this.#deps.onChange();
  }
}
