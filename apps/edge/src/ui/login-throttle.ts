// Throttles the dashboard's login so the admin token cannot be guessed online: failed attempts are counted in a
// sliding window per client address and for the whole edge; over either limit every attempt from that address (or
// every attempt at all) is refused with 429 and Retry-After until the oldest failure leaves the window — a correct
// token included, so a lockout is no oracle. A success clears its address's failures. Bounded: at most
// `maxAddresses` addresses are tracked (the one with the oldest last failure is forgotten first).
import type { Clock } from '../clock.js';

export interface LoginThrottleLimits {
  /** Failed logins allowed per client address within `windowMs`. */
  perAddress: number;
  /** Failed logins allowed for the whole edge within `windowMs`. */
  global: number;
  windowMs: number;
  /** Client addresses tracked at once. */
  maxAddresses: number;
}

export const DEFAULT_LOGIN_THROTTLE_LIMITS: Readonly<LoginThrottleLimits> = Object.freeze({
  perAddress: 5,
  global: 30,
  windowMs: 60_000,
  maxAddresses: 4096,
});

export interface LoginThrottle {
  /** Milliseconds until `address` may try again; 0 = it may try now. */
  retryAfterMs(address: string): number;
  /** Records a failed attempt of `address`. */
  failed(address: string): void;
  /** A correct token: forgets the address's failures. */
  succeeded(address: string): void;
  /** Addresses tracked (tests: bounded). */
  readonly trackedAddresses: number;
}

export function createLoginThrottle(
  clock: Pick<Clock, 'now'>,
  limits: Partial<LoginThrottleLimits> = {},
): LoginThrottle {
  const { perAddress, global, windowMs, maxAddresses } = { ...DEFAULT_LOGIN_THROTTLE_LIMITS, ...limits };
  // Failure times, oldest first; each list holds at most its limit (older entries cannot matter).
  const byAddress = new Map<string, number[]>();
  const all: number[] = [];

  const prune = (times: number[], now: number): void => {
    while (times.length > 0 && (times[0] ?? 0) <= now - windowMs) times.shift();
  };
  /** Wait until the window holds fewer than `limit` failures. */
  const waitFor = (times: number[], limit: number, now: number): number =>
    times.length < limit ? 0 : (times[times.length - limit] ?? now) + windowMs - now;

  return {
    retryAfterMs(address) {
      const now = clock.now();
      prune(all, now);
      const own = byAddress.get(address);
      if (own) {
        prune(own, now);
        if (own.length === 0) byAddress.delete(address);
      }
      return Math.max(waitFor(all, global, now), own ? waitFor(own, perAddress, now) : 0);
    },
    failed(address) {
      const now = clock.now();
      all.push(now);
      if (all.length > global) all.splice(0, all.length - global);
      let own = byAddress.get(address);
      if (own)
        byAddress.delete(address); // re-inserted last: the map stays ordered by last failure
      else {
        own = [];
        while (byAddress.size >= maxAddresses) {
          const oldest = byAddress.keys().next().value;
          if (oldest === undefined) break;
          byAddress.delete(oldest);
        }
      }
      own.push(now);
      if (own.length > perAddress) own.splice(0, own.length - perAddress);
      byAddress.set(address, own);
    },
    succeeded(address) {
      byAddress.delete(address);
    },
    get trackedAddresses() {
      return byAddress.size;
    },
  };
}
