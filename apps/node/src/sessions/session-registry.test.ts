import { describe, expect, it } from '@jest/globals';
import { SessionLimitError, SessionRegistry, type LogicalSession } from './session-registry.js';

class FakeSession implements LogicalSession {
  readonly mode = 'oneshot' as const;
  busy = false;
  closedWith: string[] = [];
  close(reason: string): Promise<void> {
    this.closedWith.push(reason);
    return Promise.resolve();
  }
}

describe('SessionRegistry', () => {
  it('returns the same session for the same target and session id', () => {
    const registry = new SessionRegistry<FakeSession>({ maxSessions: 0, idleTtlMs: 0, now: () => 0 });
    const first = registry.open('t', 's', () => new FakeSession());
    expect(registry.open('t', 's', () => new FakeSession()).session).toBe(first.session);
    expect(registry.open('t', 'other', () => new FakeSession()).session).not.toBe(first.session);
    expect(registry.size).toBe(2);
  });

  it('throws SessionLimitError past the cap while busy and frees a slot on remove', () => {
    const registry = new SessionRegistry<FakeSession>({ maxSessions: 1, idleTtlMs: 0, now: () => 0 });
    const first = registry.open('t', 'a', () => new FakeSession());
    first.session.busy = true;
    expect(() => registry.open('t', 'b', () => new FakeSession())).toThrow(SessionLimitError);
    expect(registry.remove('t', 'a', new FakeSession())).toBeUndefined();
    expect(registry.remove('t', 'a', first.session)).toBe(first);
    expect(registry.open('t', 'b', () => new FakeSession()).sessionId).toBe('b');
  });

  it('expires idle sessions after the TTL but never a busy one', async () => {
    let now = 1000;
    const registry = new SessionRegistry<FakeSession>({ maxSessions: 0, idleTtlMs: 500, now: () => now });
    const idle = registry.open('t', 'idle', () => new FakeSession()).session;
    const busy = registry.open('t', 'busy', () => new FakeSession()).session;
    busy.busy = true;
    now = 1400;
    expect(await registry.expireIdle()).toBe(0);
    now = 1600;
    expect(await registry.expireIdle()).toBe(1);
    expect(idle.closedWith).toEqual(['idle-ttl']);
    expect(registry.list().map((entry) => entry.sessionId)).toEqual(['busy']);
    await registry.closeAll('shutdown');
    expect(busy.closedWith).toEqual(['shutdown']);
    expect(registry.size).toBe(0);
  });

  it('touch keeps a session alive', async () => {
    let now = 0;
    const registry = new SessionRegistry<FakeSession>({ maxSessions: 0, idleTtlMs: 100, now: () => now });
    registry.open('t', 's', () => new FakeSession());
    now = 90;
    registry.touch('t', 's');
    now = 150;
    expect(await registry.expireIdle()).toBe(0);
    await registry.closeAll('done');
  });
});

describe('SessionRegistry at max_sessions', () => {
  it('evicts and closes the least recently used idle session for a new one', async () => {
    let now = 0;
    const evicted: string[] = [];
    const registry = new SessionRegistry<FakeSession>({
      maxSessions: 2,
      idleTtlMs: 0,
      now: () => now,
      onEvicted: (_target, sessionId) => evicted.push(sessionId),
    });
    const older = registry.open('t', 'older', () => new FakeSession()).session;
    now = 10;
    const newer = registry.open('t', 'newer', () => new FakeSession()).session;
    now = 20;
    registry.touch('t', 'older');
    now = 30;
    registry.open('t', 'third', () => new FakeSession());
    await Promise.resolve();
    expect(evicted).toEqual(['newer']);
    expect(newer.closedWith).toEqual(['evicted']);
    expect(older.closedWith).toEqual([]);
    expect(registry.list().map((entry) => entry.sessionId)).toEqual(['older', 'third']);
  });

  it('refuses with SessionLimitError when every live session is busy', () => {
    const registry = new SessionRegistry<FakeSession>({ maxSessions: 1, idleTtlMs: 0, now: () => 0 });
    registry.open('t', 'a', () => new FakeSession()).session.busy = true;
    expect(() => registry.open('t', 'b', () => new FakeSession())).toThrow(SessionLimitError);
    expect(registry.size).toBe(1);
  });
});
