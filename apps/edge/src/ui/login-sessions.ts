// The dashboard's login sessions: after `POST /api/v1/login` with the admin token the browser holds a random
// session id (256 bits from the CSPRNG) in an HttpOnly cookie — never the token itself — and the edge keeps the id,
// with its expiry, here. `logout` forgets it. The store is bounded: at most `maxSessions` at once, the oldest
// forgotten first when a new login needs room; expired ids are dropped whenever they are seen or on the next login.
// Ids are kept as their SHA-256: a lookup by digest leaks nothing about how close a guess was, and a heap dump
// of the map does not hand out a live session.
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';

export interface LoginSessionLimits {
  /** How long a session lasts after login (absolute, not sliding). */
  ttlMs: number;
  /** Sessions kept at once; a login beyond it forgets the oldest. */
  maxSessions: number;
}

export const DEFAULT_LOGIN_SESSION_LIMITS: Readonly<LoginSessionLimits> = Object.freeze({
  ttlMs: 12 * 60 * 60 * 1000,
  maxSessions: 256,
});

export interface LoginSession {
  readonly id: string;
  readonly expiresAtMs: number;
}

export interface LoginSessions {
  /** A new session id (base64url, 256 bits) valid for `ttlMs`. */
  create(): LoginSession;
  /** True while `id` names a live session. */
  valid(id: string): boolean;
  /** Forgets `id` (logout); unknown ids are ignored. */
  revoke(id: string): void;
  readonly size: number;
}

export function createLoginSessions(
  clock: Pick<Clock, 'now'>,
  limits: Partial<LoginSessionLimits> = {},
  random: (size: number) => Buffer = randomBytes,
): LoginSessions {
  const { ttlMs, maxSessions } = { ...DEFAULT_LOGIN_SESSION_LIMITS, ...limits };
  // digest (hex) → expiry; insertion order is login order, so the first entry is the oldest.
  const sessions = new Map<string, number>();

  const digestOf = (id: string): string => createHash('sha256').update(id).digest('hex');

  function sweep(now: number): void {
    for (const [digest, expires] of sessions) if (expires <= now) sessions.delete(digest);
  }

  return {
    create() {
      const now = clock.now();
      sweep(now);
      while (sessions.size >= maxSessions) {
        const oldest = sessions.keys().next().value;
        if (oldest === undefined) break;
        sessions.delete(oldest);
      }
      const id = random(32).toString('base64url');
      const expiresAtMs = now + ttlMs;
      sessions.set(digestOf(id), expiresAtMs);
      return { id, expiresAtMs };
    },
    valid(id) {
      if (id === '' || id.length > 128) return false;
      const digest = digestOf(id);
      const expires = sessions.get(digest);
      if (expires === undefined) return false;
      if (expires <= clock.now()) {
        sessions.delete(digest);
        return false;
      }
      return true;
    },
    revoke(id) {
      sessions.delete(digestOf(id));
    },
    get size() {
      return sessions.size;
    },
  };
}
