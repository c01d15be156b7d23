// Runs discovery passes and reports them to the edge as NodeDiscovery frames: after each registration (forced —
// a new link knows nothing), after a config refresh and every `intervalMs` (sent only when the result changed,
// ignoring the timestamp), and on the edge's `discover` command (forced). Passes never overlap: a request while
// one runs is coalesced into a single follow-up pass. Nothing here waits on registration; the link is already
// up when a pass starts, and a report that cannot be sent is sent again by the next pass.
import { envelope, type DiscoverySettings, type NodeDiscovery } from '@iop/wire';
import type { Logger } from '@iop/logging';
import type { Clock, ClockTimer } from '@iop/clock';
import type { Outbound } from '../link/outbound.js';
import type { NodeDiscoverer } from './node-discoverer.js';

export const DEFAULT_DISCOVERY_INTERVAL_MS = 5 * 60_000;

export interface DiscoveryReporterDeps {
  discoverer: Pick<NodeDiscoverer, 'discover'>;
  /** The payload's discovery settings, read at each pass (a refresh may change them). */
  settings: () => DiscoverySettings | undefined;
  outbound: Outbound;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}

export interface DiscoveryPass {
  discovery: NodeDiscovery;
  /** Whether this pass's result reached the edge (false: unchanged, or the link was down). */
  sent: boolean;
}

export class DiscoveryReporter {
  readonly #deps: DiscoveryReporterDeps;
  readonly #controller = new AbortController();
  #running: Promise<DiscoveryPass | undefined> | undefined;
  #queued: Promise<DiscoveryPass | undefined> | undefined;
  #forceQueued = false;
  /** Fingerprint of the last report the edge received; undefined = send the next one whatever it holds. */
  #lastSent: string | undefined;
  #timer: ClockTimer | undefined;
  #started = false;

  constructor(deps: DiscoveryReporterDeps) {
    this.#deps = deps;
  }

  /** Starts the periodic passes (the first after one interval). Idempotent. */
  start(): void {
    if (this.#started || this.#controller.signal.aborted) return;
    this.#started = true;
    this.#schedule();
  }

  /**
   * Runs a pass (or joins the follow-up of the one running). `force` sends the result even when unchanged.
   * Resolves undefined once stopped; never rejects.
   */
  request(force: boolean): Promise<DiscoveryPass | undefined> {
    if (this.#controller.signal.aborted) return Promise.resolve(undefined);
    if (!this.#running) {
      const pass = this.#pass(force).finally(() => {
        if (this.#running === pass) this.#running = undefined;
      });
      this.#running = pass;
      return pass;
    }
    this.#forceQueued ||= force;
    this.#queued ??= this.#running.then(() => {
      const queuedForce = this.#forceQueued;
      this.#forceQueued = false;
      this.#queued = undefined;
      return this.request(queuedForce);
    });
    return this.#queued;
  }

  /** Stops the timer and aborts a pass in flight (its probes end at once). Idempotent. */
  async stop(): Promise<void> {
    this.#deps.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#controller.abort(new Error('discovery stopped'));
    await this.#running;
    await this.#queued;
  }

  #schedule(): void {
    this.#timer = this.#deps.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.request(false).finally(() => {
        if (!this.#controller.signal.aborted) this.#schedule();
      });
    }, this.#deps.intervalMs ?? DEFAULT_DISCOVERY_INTERVAL_MS);
  }

  async #pass(force: boolean): Promise<DiscoveryPass | undefined> {
    const started = this.#deps.clock.now();
    let discovery: NodeDiscovery;
    try {
      discovery = await this.#deps.discoverer.discover(this.#deps.settings(), this.#controller.signal);
    } catch (error) {
      this.#deps.logger.warn({ error: String(error) }, 'discovery pass failed');
      return undefined;
    }
    if (this.#controller.signal.aborted) return undefined;
    const fingerprint = fingerprintOf(discovery);
    if (!force && fingerprint === this.#lastSent) return { discovery, sent: false };
    const sent = await this.#deps.outbound.send(envelope.nodeDiscovery(discovery));
    this.#lastSent = sent ? fingerprint : undefined;
    this.#deps.logger.info(
      {
        sent,
        tookMs: this.#deps.clock.now() - started,
        backends: discovery.backends.map((backend) => `${backend.kind}(${backend.models.length})`),
        clis: discovery.clis.map((cli) => cli.name),
        gpus: discovery.host?.gpus.length ?? 0,
      },
      'discovery reported',
    );
    return { discovery, sent };
  }
}

function fingerprintOf(discovery: NodeDiscovery): string {
  return JSON.stringify({ ...discovery, discoveredAtUnixMs: 0 });
}
