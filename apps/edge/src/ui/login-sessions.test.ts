import { describe, expect, it } from '@jest/globals';
import { createLoginSessions } from './login-sessions.js';

describe('login sessions', () => {
  it('hands out distinct 256-bit ids that are valid until their expiry, then gone', () => {
    const clock = { at: 1_000, now: () => clock.at };
    const sessions = createLoginSessions(clock, { ttlMs: 10_000, maxSessions: 8 });
    const first = sessions.create();
    const second = sessions.create();
    expect(first.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(first.id, 'base64url')).toHaveLength(32);
    expect(second.id).not.toBe(first.id);
    expect(first.expiresAtMs).toBe(11_000);
    expect(sessions.valid(first.id)).toBe(true);
    expect(sessions.valid(`${first.id}x`)).toBe(false);
    expect(sessions.valid('')).toBe(false);
    clock.at = 11_000;
    expect(sessions.valid(first.id)).toBe(false);
    expect(sessions.size).toBe(1);
  });

  it('revokes on logout and forgets the oldest beyond maxSessions', () => {
    const clock = { at: 0, now: () => clock.at };
    const sessions = createLoginSessions(clock, { ttlMs: 60_000, maxSessions: 2 });
    const a = sessions.create();
    const b = sessions.create();
    const c = sessions.create();
    expect(sessions.size).toBe(2);
    expect([sessions.valid(a.id), sessions.valid(b.id), sessions.valid(c.id)]).toEqual([false, true, true]);
    sessions.revoke(b.id);
    sessions.revoke('unknown');
    expect(sessions.valid(b.id)).toBe(false);
    expect(sessions.size).toBe(1);
  });
});
