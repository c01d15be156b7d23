// Passive health: one circuit per provider, fed by the outcomes of the runs the provider served (the run
// supervisor reports them), read by the pool when it picks candidates.
//
//   closed ──(consecutive_failures in a row, or failure_rate over window_ms with ≥ min_requests)──▶ open
//   open ──(cooldown_ms elapsed; evaluated when read, no timer)──▶ half_open
//   half_open ──(the one probe run's success)──▶ closed      half_open ──(its failure)──▶ open (cooldown again)
//
// Closed admits every run; open admits none; half_open admits one probe run at a time (the pool takes it with
// `leased`, and a probe that ends without a verdict — cancelled, a client error — frees the probe slot again with
// `released`). What counts is decided by the supervisor: a dispatch failure of the backend or the node (refused
// or reset connection, 5xx or 429, node busy or lost) is a failure; a run that produced output or completed is a
// success; client errors and cancellations are neither. Outcomes reported while a circuit is open are ignored
// (runs that started before it opened). Each transition is logged once and reported to `onChange` (the pool
// re-evaluates its waiters when a circuit closes).
//
// The window is 10 buckets of window_ms / 10, so the rate costs a fixed amount of memory per provider however
// busy it is; entries exist for providers that had an outcome, and `retain` drops removed providers.
import type { CircuitBreakerConfig } from '@iop/config';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

/** What the pool asks about a provider's circuit (implemented by CircuitBreaker). */
export interface CircuitGate {
  /** The circuit's state now (open turns half_open here once its cool-down is over). */
  state(providerId: string): CircuitState;
  /** True when a run may be placed on the provider now (closed, or half_open with no probe running). */
  admits(providerId: string): boolean;
  /** A run was placed on the provider; true when it is the half-open probe (pass it back to `released`). */
  leased(providerId: string): boolean;
  /** The probe's lease was returned; frees the probe slot when no verdict came. */
  released(providerId: string): void;
}

export interface CircuitBreakerOptions {
  settings: CircuitBreakerConfig;
  clock: Clock;
  logger: Logger;
  /** Told every transition (after it happened). */
  onChange?: (providerId: string, from: CircuitState, to: CircuitState) => void;
}

const BUCKETS = 10;

interface Bucket {
  /** Start of the bucket's slice of time (ms, the clock's epoch). */
  start: number;
  requests: number;
  failures: number;
}

interface Circuit {
  state: CircuitState;
  consecutiveFailures: number;
  openedAt: number;
  probing: boolean;
  buckets: Bucket[];
}

/**
 * The circuits. Placement's ProviderOutcomes (placement/outcomes.ts) is what the supervisor reports to it: `succeeded`
 * and `failed` take the same arguments, the failure's reason (a DispatchFailureReason) only said in the log.
 */
export class CircuitBreaker implements CircuitGate {
  private settings: CircuitBreakerConfig;
  private readonly circuits = new Map<string, Circuit>();

  constructor(private readonly options: CircuitBreakerOptions) {
    this.settings = options.settings;
  }

  /** New thresholds (a live refresh); circuits keep their state and counts. */
  applyConfig(settings: CircuitBreakerConfig): void {
    this.settings = settings;
  }

  /** Forgets the circuits of providers not in `providerIds` (removed from the config). */
  retain(providerIds: ReadonlySet<string>): void {
    for (const providerId of this.circuits.keys()) {
      if (!providerIds.has(providerId)) this.circuits.delete(providerId);
    }
  }

  state(providerId: string): CircuitState {
    const circuit = this.circuits.get(providerId);
    if (!circuit) return 'closed';
    if (
      circuit.state === 'open' &&
      this.options.clock.now() - circuit.openedAt >= this.settings.cooldown_ms
    ) {
      this.move(providerId, circuit, 'half_open');
    }
    return circuit.state;
  }

  admits(providerId: string): boolean {
    const state = this.state(providerId);
    if (state === 'closed') return true;
    if (state === 'open') return false;
    return !(this.circuits.get(providerId) as Circuit).probing;
  }

  leased(providerId: string): boolean {
    if (this.state(providerId) !== 'half_open') return false;
    const circuit = this.circuits.get(providerId) as Circuit;
    if (circuit.probing) return false;
    circuit.probing = true;
    return true;
  }

  released(providerId: string): void {
    const circuit = this.circuits.get(providerId);
    if (circuit?.state === 'half_open') circuit.probing = false;
  }

  succeeded(providerId: string): void {
    const circuit = this.circuit(providerId);
    switch (this.state(providerId)) {
      case 'open':
        return;
      case 'half_open':
        this.close(providerId, circuit);
        return;
      case 'closed':
        circuit.consecutiveFailures = 0;
        this.count(circuit, false);
        return;
    }
  }

  failed(providerId: string, reason: string): void {
    const circuit = this.circuit(providerId);
    switch (this.state(providerId)) {
      case 'open':
        return;
      case 'half_open':
        this.open(providerId, circuit, `the half-open probe failed (${reason})`);
        return;
      case 'closed': {
        circuit.consecutiveFailures += 1;
        this.count(circuit, true);
        const { consecutive_failures: limit, failure_rate: rate, min_requests: minimum } = this.settings;
        if (circuit.consecutiveFailures >= limit) {
          this.open(
            providerId,
            circuit,
            `${circuit.consecutiveFailures} dispatch failures in a row (${reason})`,
          );
          return;
        }
        const { requests, failures } = this.window(circuit);
        if (requests >= minimum && failures / requests >= rate) {
          this.open(providerId, circuit, `${failures} of ${requests} dispatches failed (${reason})`);
        }
        return;
      }
    }
  }

  /** Every provider whose circuit is not closed, with its state (diagnostics). */
  notClosed(): { providerId: string; state: CircuitState }[] {
    const result: { providerId: string; state: CircuitState }[] = [];
    for (const providerId of this.circuits.keys()) {
      const state = this.state(providerId);
      if (state !== 'closed') result.push({ providerId, state });
    }
    return result;
  }

  private open(providerId: string, circuit: Circuit, why: string): void {
    circuit.openedAt = this.options.clock.now();
    circuit.probing = false;
    this.options.logger.warn(
      { provider: providerId, cooldownMs: this.settings.cooldown_ms, reason: why },
      'provider circuit opened',
    );
    this.move(providerId, circuit, 'open');
  }

  private close(providerId: string, circuit: Circuit): void {
    circuit.consecutiveFailures = 0;
    circuit.probing = false;
    circuit.buckets = [];
    this.options.logger.info(
      { provider: providerId },
      'provider circuit closed (the half-open probe succeeded)',
    );
    this.move(providerId, circuit, 'closed');
  }

  private circuit(providerId: string): Circuit {
    let circuit = this.circuits.get(providerId);
    if (!circuit) {
      circuit = { state: 'closed', consecutiveFailures: 0, openedAt: 0, probing: false, buckets: [] };
      this.circuits.set(providerId, circuit);
    }
    return circuit;
  }

  private move(providerId: string, circuit: Circuit, to: CircuitState): void {
    const from = circuit.state;
    if (from === to) return;
    circuit.state = to;
    if (to === 'half_open') {
      this.options.logger.info(
        { provider: providerId },
        'provider circuit half-open: admitting one probe run',
      );
    }
    this.options.onChange?.(providerId, from, to);
  }

  /** Adds one outcome to the current bucket, starting a new bucket (and dropping the oldest) as time moves. */
  private count(circuit: Circuit, failed: boolean): void {
    const now = this.options.clock.now();
    const width = Math.max(1, Math.floor(this.settings.window_ms / BUCKETS));
    const start = now - (now % width);
    let bucket = circuit.buckets[circuit.buckets.length - 1];
    if (!bucket || bucket.start !== start) {
      bucket = { start, requests: 0, failures: 0 };
      circuit.buckets.push(bucket);
      if (circuit.buckets.length > BUCKETS) circuit.buckets.shift();
    }
    bucket.requests += 1;
    if (failed) bucket.failures += 1;
  }

  /** Requests and failures in the buckets still inside the window. */
  private window(circuit: Circuit): { requests: number; failures: number } {
    const since = this.options.clock.now() - this.settings.window_ms;
    let requests = 0;
    let failures = 0;
    for (const bucket of circuit.buckets) {
      if (bucket.start <= since) continue;
      requests += bucket.requests;
      failures += bucket.failures;
    }
    return { requests, failures };
  }
}
