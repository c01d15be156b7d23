// The dashboard's logins (UiLogin; not a "session": that word is the logical agent session): after
// `POST /api/v1/login` with the admin token the browser holds a random login id (256 bits from the CSPRNG) in an
// HttpOnly cookie — never the token itself — and the edge keeps the id, with its expiry, here. `logout` forgets it.
// The store is bounded: at most `maxLogins` at once, the oldest forgotten first when a new login needs room;
// expired ids are dropped whenever they are seen or on the next login. Ids are kept as their SHA-256: a lookup by
// digest leaks nothing about how close a guess was, and a heap dump of the map does not hand out a live login.
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';

export interface UiLoginLimits {
  /** How long a login lasts (absolute, not sliding). */
  ttlMs: number;
  /** Logins kept at once; a login beyond it forgets the oldest. */
  maxLogins: number;
}

export const DEFAULT_UI_LOGIN_LIMITS: Readonly<UiLoginLimits> = Object.freeze({
  ttlMs: 12 * 60 * 60 * 1000,
  maxLogins: 256,
});

export interface UiLogin {
  readonly id: string;
  readonly expiresAtMs: number;
}

export interface UiLogins {
  /** A new login id (base64url, 256 bits) valid for `ttlMs`. */
  create(): UiLogin;
  /** True while `id` names a live login. */
  valid(id: string): boolean;
  /** Forgets `id` (logout); unknown ids are ignored. */
  revoke(id: string): void;
  readonly size: number;
}

export function createUiLogins(
  clock: Pick<Clock, 'now'>,
  limits: Partial<UiLoginLimits> = {},
  random: (size: number) => Buffer = randomBytes,
): UiLogins {
  const { ttlMs, maxLogins } = { ...DEFAULT_UI_LOGIN_LIMITS, ...limits };
  // digest (hex) → expiry; insertion order is login order, so the first entry is the oldest.
  const logins = new Map<string, number>();

  const digestOf = (id: string): string => createHash('sha256').update(id).digest('hex');

  function sweep(now: number): void {
    for (const [digest, expires] of logins) if (expires <= now) logins.delete(digest);
  }

  return {
    create() {
      const now = clock.now();
      sweep(now);
      while (logins.size >= maxLogins) {
        const oldest = logins.keys().next().value;
        if (oldest === undefined) break;
        logins.delete(oldest);
      }
      const id = random(32).toString('base64url');
      const expiresAtMs = now + ttlMs;
      logins.set(digestOf(id), expiresAtMs);
      return { id, expiresAtMs };
    },
    valid(id) {
      if (id === '' || id.length > 128) return false;
      const digest = digestOf(id);
      const expires = logins.get(digest);
      if (expires === undefined) return false;
      if (expires <= clock.now()) {
        logins.delete(digest);
        return false;
      }
      return true;
    },
    revoke(id) {
      logins.delete(digestOf(id));
    },
    get size() {
      return logins.size;
    },
  };
}
