// Bounds the warning lines one peer address can make the edge write: at most `perWindow` per `windowMs` per
// address; the rest are counted and the count rides on the next line that is written. The table of addresses is
// itself bounded (oldest entry dropped), so a scan from many addresses cannot grow it.
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';

export interface WarningLimiterOptions {
  perWindow?: number;
  windowMs?: number;
  maxAddresses?: number;
  clock?: Clock;
}

export interface WarningPermit {
  allowed: boolean;
  /** Lines dropped for this address since the last one written (set when allowed). */
  suppressed: number;
}

interface Window {
  startedAtMs: number;
  written: number;
  suppressed: number;
}

export class WarningLimiter {
  readonly #perWindow: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #clock: Clock;
  readonly #windows = new Map<string, Window>();

  constructor(options: WarningLimiterOptions = {}) {
    this.#perWindow = options.perWindow ?? 20;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#maxAddresses = options.maxAddresses ?? 1024;
    this.#clock = options.clock ?? systemClock;
  }

  /** Addresses currently tracked. */
  get size(): number {
    return this.#windows.size;
  }

  take(address: string): WarningPermit {
    const now = this.#clock.now();
    let window = this.#windows.get(address);
    if (window && now - window.startedAtMs >= this.#windowMs) {
      window = { startedAtMs: now, written: 0, suppressed: window.suppressed };
      this.#windows.set(address, window);
    }
    if (!window) {
      if (this.#windows.size >= this.#maxAddresses) {
        const oldest = this.#windows.keys().next();
        if (!oldest.done) this.#windows.delete(oldest.value);
      }
      window = { startedAtMs: now, written: 0, suppressed: 0 };
      this.#windows.set(address, window);
    }
    if (window.written >= this.#perWindow) {
      window.suppressed += 1;
      return { allowed: false, suppressed: 0 };
    }
    window.written += 1;
    const suppressed = window.suppressed;
    window.suppressed = 0;
    return { allowed: true, suppressed };
  }
}

/**
 * A logger whose warnings (its children's too) go through `limiter` under `address`; a suppressed warning is
 * written at debug level instead, and the next written one carries `suppressedWarnings`.
 *
 * Its children do not make children of `logger`: they keep their bindings and write them as fields of each line
 * (a field of the line wins over a binding of the same name). A pino child per node connection — two or three
 * per connection — cost kilobytes of heap each and its set-up on every registration, for lines that are written
 * rarely: at 10,000 nodes that was a large share of the edge's memory and of each registration's CPU.
 */
export function limitWarnings(logger: Logger, limiter: WarningLimiter, address: string): Logger {
  return new WarningLimitedLogger(logger, limiter, address, undefined);
}

class WarningLimitedLogger implements Logger {
  readonly #logger: Logger;
  readonly #limiter: WarningLimiter;
  readonly #address: string;
  readonly #bindings: Record<string, unknown> | undefined;

  constructor(
    logger: Logger,
    limiter: WarningLimiter,
    address: string,
    bindings: Record<string, unknown> | undefined,
  ) {
    this.#logger = logger;
    this.#limiter = limiter;
    this.#address = address;
    this.#bindings = bindings;
  }

  debug(fields: Record<string, unknown>, message: string): void {
    this.#logger.debug(this.#fields(fields), message);
  }

  info(fields: Record<string, unknown>, message: string): void {
    this.#logger.info(this.#fields(fields), message);
  }

  error(fields: Record<string, unknown>, message: string): void {
    this.#logger.error(this.#fields(fields), message);
  }

  warn(fields: Record<string, unknown>, message: string): void {
    const permit = this.#limiter.take(this.#address);
    if (!permit.allowed) {
      this.#logger.debug(this.#fields(fields), message);
      return;
    }
    const line = this.#fields(fields);
    this.#logger.warn(
      permit.suppressed > 0 ? { ...line, suppressedWarnings: permit.suppressed } : line,
      message,
    );
  }

  child(bindings: Record<string, unknown>): Logger {
    return new WarningLimitedLogger(this.#logger, this.#limiter, this.#address, {
      ...this.#bindings,
      ...bindings,
    });
  }

  #fields(fields: Record<string, unknown>): Record<string, unknown> {
    return this.#bindings === undefined ? fields : { ...this.#bindings, ...fields };
  }
}
