// Probes the health of every enabled provider's adapter at its interval and reports it to the edge as a
// ProviderStatusReport — only when something changed (health, detail or models), plus once after each
// registration so a (re)started edge learns the current state. Rounds never overlap; each probe is bounded.
//
// A provider's interval is its own `health_probe_interval_ms` (the config's `providers[].health`) when the payload
// carries one, else the node's `runtime.health_probe_interval_ms`; 0 means that provider is never probed (it is
// left out of the reports, so the edge shows its health `unknown`). With every interval 0 no timer runs at all.
//
// A failed probe is logged with its cause code and detail: every failure at debug, and at warn the first one and
// each change of a provider's health or cause (a provider failing the same way every round warns once); its
// recovery is logged at info. The report carries the cause too, so `nodes list` shows it.
//
// Each entry also carries the models the provider's backend holds loaded (from the ResidentMonitor, when given):
// `residentChanged()` re-sends the last probe results with the new lists, without probing. A provider that is not
// probed but whose backend's list is known is reported with health unspecified (`unknown` on the edge, as when
// it is left out) and its list, so placement by residency does not depend on health probes being on.
import {
  envelope,
  ProviderHealth,
  ResidentState,
  type ProviderConfig,
  type ProviderHealthEntry,
} from '@iop/wire';
import type { Adapter, HealthCause, HealthState, TargetHealth } from '../adapters/adapter.js';
import type { Clock, ClockTimer } from '@iop/clock';
import type { Logger } from '@iop/logging';
import type { Outbound } from '../link/outbound.js';
import type { ResidentSnapshot } from './resident-monitor.js';

export interface HealthMonitorDeps {
  adapters: { resolve(name: string): Adapter };
  providers: () => readonly ProviderConfig[];
  /** The node's interval (from the payload; 0 = no probes). Read each round because refreshes change it. */
  intervalMs: () => number;
  outbound: Outbound;
  clock: Clock;
  logger: Logger;
  probeTimeoutMs?: number;
  /** Loaded models per adapter instance (the ResidentMonitor); absent = every entry says unknown. */
  resident?: { snapshot(adapterName: string): ResidentSnapshot | undefined };
}

const RESIDENT_VALUES: Record<ResidentSnapshot['state'], ResidentState> = {
  fresh: ResidentState.RESIDENT_STATE_FRESH,
  stale: ResidentState.RESIDENT_STATE_STALE,
};

const HEALTH_VALUES: Record<HealthState, ProviderHealth> = {
  healthy: ProviderHealth.PROVIDER_HEALTH_HEALTHY,
  unhealthy: ProviderHealth.PROVIDER_HEALTH_UNHEALTHY,
  unreachable: ProviderHealth.PROVIDER_HEALTH_UNREACHABLE,
};

export class HealthMonitor {
  readonly #deps: HealthMonitorDeps;
  #timer: ClockTimer | undefined;
  #running = false;
  #round: Promise<void> | undefined;
  /** Fingerprint per provider id of what was last reported. */
  #reported = new Map<string, string>();
  /** Last probe result and its time per provider id (providers not due in a round keep theirs). */
  #latest = new Map<string, { entry: ProviderHealthEntry; at: number }>();
  #forceNext = false;
  /** Health and cause of the last probe per provider id, for logging state changes only. */
  #logged = new Map<string, { health: HealthState; cause: HealthCause | undefined }>();
  readonly #controller = new AbortController();

  constructor(deps: HealthMonitorDeps) {
    this.#deps = deps;
  }

  /** Starts the periodic rounds (the first one at once). Idempotent. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(0);
  }

  /** Makes the next round report everything (after a registration) and runs it now. */
  requestFullReport(): void {
    this.#forceNext = true;
    if (!this.#running) return;
    this.#deps.clock.clearTimeout(this.#timer);
    this.#schedule(0);
  }

  /**
   * Runs one probe round now over every provider whose probes are on (`dueOnly`: only those whose interval has
   * passed); resolves with what was sent (undefined when nothing changed).
   */
  probeRound(options: { dueOnly?: boolean } = {}): Promise<ProviderHealthEntry[] | undefined> {
    return this.#exclusive(() => this.#probeAll(options.dueOnly ?? false));
  }

  /**
   * A backend's loaded models changed: sends the last probe results again with the current resident lists (no
   * probe); resolves with what was sent (undefined when nothing changed or nothing was probed yet).
   */
  residentChanged(): Promise<ProviderHealthEntry[] | undefined> {
    if (!this.#running) return Promise.resolve(undefined);
    return this.#exclusive(() => this.#report()).catch((error: unknown) => {
      this.#deps.logger.warn({ error: String(error) }, 'resident models report failed');
      return undefined;
    });
  }

  /** Runs `work` after any round in flight, so rounds and reports never overlap. */
  async #exclusive(
    work: () => Promise<ProviderHealthEntry[] | undefined>,
  ): Promise<ProviderHealthEntry[] | undefined> {
    while (this.#round) await this.#round;
    let sent: ProviderHealthEntry[] | undefined;
    this.#round = (async () => {
      sent = await work();
    })();
    try {
      await this.#round;
    } finally {
      this.#round = undefined;
    }
    return sent;
  }

  /** Stops the rounds and aborts probes in flight. Idempotent. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#deps.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#controller.abort('health monitor stopped');
    await this.#round?.catch(() => undefined);
  }

  #schedule(delayMs: number, dueOnly = false): void {
    this.#timer = this.#deps.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.probeRound({ dueOnly })
        .catch((error: unknown) => this.#deps.logger.warn({ error: String(error) }, 'health round failed'))
        .finally(() => {
          if (!this.#running || this.#timer) return;
          const next = this.#nextDelay();
          // No provider is probed: no timer until a refresh or registration asks for a report again.
          if (next !== undefined) this.#schedule(next, true);
        });
    }, delayMs);
  }

  /** A provider's probe interval: its own when the payload sets one, else the node's; 0 = never probed. */
  #intervalOf(provider: ProviderConfig): number {
    return provider.healthProbeIntervalMs ?? this.#deps.intervalMs();
  }

  /** Providers that are probed at all: enabled, with a non-zero interval. */
  #probed(): ProviderConfig[] {
    return this.#deps.providers().filter((provider) => provider.enabled && this.#intervalOf(provider) > 0);
  }

  /** Time until the next provider is due; undefined when no provider is probed. */
  #nextDelay(): number | undefined {
    const now = this.#deps.clock.now();
    let next: number | undefined;
    for (const provider of this.#probed()) {
      const last = this.#latest.get(provider.id)?.at;
      const delay = last === undefined ? 0 : Math.max(0, last + this.#intervalOf(provider) - now);
      next = next === undefined ? delay : Math.min(next, delay);
    }
    return next;
  }

  async #probeAll(dueOnly: boolean): Promise<ProviderHealthEntry[] | undefined> {
    const probed = this.#probed();
    const now = this.#deps.clock.now();
    const providers = dueOnly
      ? probed.filter((provider) => {
          const last = this.#latest.get(provider.id)?.at;
          return last === undefined || now - last >= this.#intervalOf(provider);
        })
      : probed;
    const byAdapter = new Map<string, Promise<ProbeOutcome>>();
    const entries = await Promise.all(
      providers.map(async (provider): Promise<ProviderHealthEntry> => {
        let probe = byAdapter.get(provider.adapter);
        if (!probe) {
          probe = this.#probe(provider.adapter);
          byAdapter.set(provider.adapter, probe);
        }
        const result = outcomeFor(provider, await probe);
        if (!this.#controller.signal.aborted) this.#logOutcome(provider, result);
        return {
          providerId: provider.id,
          health: HEALTH_VALUES[result.health],
          detail: result.detail,
          cause: result.health === 'healthy' ? '' : (result.cause ?? 'error'),
          checkedAtUnixMs: this.#deps.clock.now(),
          models: result.models,
          residentModels: [],
          residentState: ResidentState.RESIDENT_STATE_UNSPECIFIED,
        };
      }),
    );
    if (this.#controller.signal.aborted) return undefined;
    for (const entry of entries) this.#latest.set(entry.providerId, { entry, at: now });
    // Only providers still probed are reported; the others are forgotten (the edge shows them `unknown`).
    const current = new Set(probed.map((provider) => provider.id));
    for (const id of this.#latest.keys()) if (!current.has(id)) this.#latest.delete(id);
    for (const id of this.#logged.keys()) if (!current.has(id)) this.#logged.delete(id);
    return this.#report();
  }

  /**
   * Sends the latest entry of each probed provider, and a resident-only entry of each unprobed enabled provider
   * whose backend's list is known, when that differs from what was sent.
   */
  async #report(): Promise<ProviderHealthEntry[] | undefined> {
    if (this.#controller.signal.aborted) return undefined;
    const probed = new Set(this.#probed().map((provider) => provider.id));
    const report = this.#deps.providers().flatMap((provider) => {
      if (!provider.enabled) return [];
      const latest = probed.has(provider.id) ? this.#latest.get(provider.id) : undefined;
      if (latest) return [this.#withResident(latest.entry, provider.adapter)];
      if (probed.has(provider.id) || !this.#deps.resident?.snapshot(provider.adapter)) return [];
      return [this.#withResident(unprobedEntry(provider.id), provider.adapter)];
    });
    const force = this.#forceNext;
    this.#forceNext = false;
    const next = new Map(report.map((entry) => [entry.providerId, fingerprint(entry)]));
    const changed =
      force ||
      next.size !== this.#reported.size ||
      [...next].some(([id, value]) => this.#reported.get(id) !== value);
    if (!changed) return undefined;
    const sent = await this.#deps.outbound.send(envelope.providerStatusReport(report));
    // Only remember what reached the edge, so a report lost to a disconnect is sent again.
    if (sent) this.#reported = next;
    else this.#forceNext = true;
    return sent ? report : undefined;
  }

  #withResident(entry: ProviderHealthEntry, adapterName: string): ProviderHealthEntry {
    const resident = this.#deps.resident?.snapshot(adapterName);
    if (!resident) return entry;
    return { ...entry, residentModels: [...resident.models], residentState: RESIDENT_VALUES[resident.state] };
  }

  /** Logs a probe's outcome for `provider`: see the header for which lines at which level. */
  #logOutcome(provider: ProviderConfig, result: ProbeOutcome): void {
    const logger = this.#deps.logger;
    const previous = this.#logged.get(provider.id);
    const cause = result.health === 'healthy' ? undefined : (result.cause ?? 'error');
    this.#logged.set(provider.id, { health: result.health, cause });
    const fields = { providerId: provider.id, adapter: provider.adapter, health: result.health };
    if (result.health === 'healthy') {
      if (previous !== undefined && previous.health !== 'healthy') {
        logger.info({ ...fields, previousCause: previous.cause }, 'provider health probe recovered');
      }
      return;
    }
    const failure = { ...fields, cause, detail: result.detail };
    logger.debug(failure, 'provider health probe failed');
    if (previous === undefined || previous.health !== result.health || previous.cause !== cause) {
      logger.warn(
        { ...failure, ...(previous ? { previousHealth: previous.health } : {}) },
        `provider ${provider.id} is ${result.health}: ${cause} (${result.detail})`,
      );
    }
  }

  async #probe(adapterName: string): Promise<ProbeOutcome> {
    let adapter: Adapter;
    try {
      adapter = this.#deps.adapters.resolve(adapterName);
    } catch (error) {
      return { health: 'unreachable', detail: errorMessage(error), cause: 'error', models: [] };
    }
    const timeoutMs = this.#deps.probeTimeoutMs ?? 5000;
    const controller = new AbortController();
    const onStop = () => controller.abort('health monitor stopped');
    this.#controller.signal.addEventListener('abort', onStop, { once: true });
    let timer: ClockTimer | undefined;
    const timeout = new Promise<ProbeOutcome>((resolve) => {
      timer = this.#deps.clock.setTimeout(() => {
        controller.abort('health probe timed out');
        resolve({
          health: 'unreachable',
          detail: `health probe timed out after ${timeoutMs} ms`,
          cause: 'timeout',
          models: [],
        });
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        adapter
          .probeHealth(controller.signal)
          .then((result) => ({ ...result, models: [...result.models].sort() })),
        timeout,
      ]);
    } catch (error) {
      return {
        health: 'unhealthy',
        detail: `health probe failed: ${errorMessage(error)}`,
        cause: 'error',
        models: [],
      };
    } finally {
      this.#deps.clock.clearTimeout(timer);
      this.#controller.signal.removeEventListener('abort', onStop);
    }
  }
}

interface ProbeOutcome {
  health: HealthState;
  detail: string;
  cause?: HealthCause;
  models: string[];
  targets?: Readonly<Record<string, TargetHealth>>;
}

/**
 * A provider's share of its adapter's probe: with health by target (a CLI adapter's profiles), the first of the
 * provider's targets that is not healthy, else its healthy one; otherwise the adapter-wide result.
 */
function outcomeFor(provider: ProviderConfig, probe: ProbeOutcome): ProbeOutcome {
  const targets = probe.targets;
  if (!targets) return probe;
  const known = provider.models.flatMap((model) => targets[model] ?? []);
  const chosen = known.find((entry) => entry.health !== 'healthy') ?? known[0];
  return chosen ? { ...chosen, models: probe.models } : probe;
}

/** The entry of a provider that is not probed: health unspecified (the edge shows `unknown`), no models. */
function unprobedEntry(providerId: string): ProviderHealthEntry {
  return {
    providerId,
    health: ProviderHealth.PROVIDER_HEALTH_UNSPECIFIED,
    detail: '',
    cause: '',
    checkedAtUnixMs: 0,
    models: [],
    residentModels: [],
    residentState: ResidentState.RESIDENT_STATE_UNSPECIFIED,
  };
}

function fingerprint(entry: ProviderHealthEntry): string {
  return JSON.stringify([
    entry.health,
    entry.detail,
    entry.cause,
    entry.models,
    entry.residentModels,
    entry.residentState,
  ]);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
