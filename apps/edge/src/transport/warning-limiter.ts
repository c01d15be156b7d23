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
 */
export function limitWarnings(logger: Logger, limiter: WarningLimiter, address: string): Logger {
  return {
    debug: (fields, message) => logger.debug(fields, message),
    info: (fields, message) => logger.info(fields, message),
    error: (fields, message) => logger.error(fields, message),
    warn: (fields, message) => {
      const permit = limiter.take(address);
      if (!permit.allowed) {
        logger.debug(fields, message);
        return;
      }
      logger.warn(
        permit.suppressed > 0 ? { ...fields, suppressedWarnings: permit.suppressed } : fields,
        message,
      );
    },
    child: (bindings) => limitWarnings(logger.child(bindings), limiter, address),
  };
}
