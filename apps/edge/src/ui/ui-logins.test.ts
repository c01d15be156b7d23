import { describe, expect, it } from '@jest/globals';
import { createUiLogins } from './ui-logins.js';

describe('UiLogins', () => {
  it('hands out distinct 256-bit ids that are valid until their expiry, then gone', () => {
    const clock = { at: 1_000, now: () => clock.at };
    const logins = createUiLogins(clock, { ttlMs: 10_000, maxLogins: 8 });
    const first = logins.create();
    const second = logins.create();
    expect(first.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(first.id, 'base64url')).toHaveLength(32);
    expect(second.id).not.toBe(first.id);
    expect(first.expiresAtMs).toBe(11_000);
    expect(logins.valid(first.id)).toBe(true);
    expect(logins.valid(`${first.id}x`)).toBe(false);
    expect(logins.valid('')).toBe(false);
    clock.at = 11_000;
    expect(logins.valid(first.id)).toBe(false);
    expect(logins.size).toBe(1);
  });

  it('revokes on logout and forgets the oldest beyond maxLogins', () => {
    const clock = { at: 0, now: () => clock.at };
    const logins = createUiLogins(clock, { ttlMs: 60_000, maxLogins: 2 });
    const a = logins.create();
    const b = logins.create();
    const c = logins.create();
    expect(logins.size).toBe(2);
    expect([logins.valid(a.id), logins.valid(b.id), logins.valid(c.id)]).toEqual([false, true, true]);
    logins.revoke(b.id);
    logins.revoke('unknown');
    expect(logins.valid(b.id)).toBe(false);
    expect(logins.size).toBe(1);
  });
});
