// Logical sessions of one adapter: at most one live session per (target, session id), a cap on how many live at
// once, and an idle TTL after which an unused session is closed. At the cap a new session evicts (closes) the
// least recently used idle one, so distinct clients cannot fill the cap for a whole TTL; only when every live
// session has a run in progress is the new one refused. The registry owns the bookkeeping only; what
// a session holds (a process, a server, a conversation id) is the session's business, ended by `close`.
import { systemClock, type ClockTimer } from '@iop/clock';
export interface LogicalSession {
  /** `persistent` for a long-lived worker process, `oneshot` for per-run processes with remembered state. */
  readonly mode: 'persistent' | 'oneshot';
  /** A busy session (a run in progress) is never expired. */
  readonly busy: boolean;
  /** Stops everything the session runs. Idempotent. */
  close(reason: string): Promise<void>;
}

export interface SessionEntry<S extends LogicalSession> {
  target: string;
  sessionId: string;
  session: S;
  createdAt: number;
  lastUsedAt: number;
}

export class SessionLimitError extends Error {
  readonly code = 'session_limit';
  constructor(readonly limit: number) {
    super(
      `session limit reached (${limit} live sessions); terminate a session or wait for idle ones to expire`,
    );
    this.name = 'SessionLimitError';
  }
}

export interface SessionRegistryOptions {
  /** 0 = no cap. */
  maxSessions: number;
  /** 0 = sessions never expire. */
  idleTtlMs: number;
  now: () => number;
  /** Called when expiry closed a session (for logs). */
  onExpired?: (target: string, sessionId: string) => void;
  /** Called when a session was evicted to make room at the cap (for logs). */
  onEvicted?: (target: string, sessionId: string) => void;
}

export class SessionRegistry<S extends LogicalSession> {
  private readonly entries = new Map<string, SessionEntry<S>>();
  private sweeper: ClockTimer | undefined;

  constructor(private readonly options: SessionRegistryOptions) {}

  get size(): number {
    return this.entries.size;
  }

  get(target: string, sessionId: string): SessionEntry<S> | undefined {
    return this.entries.get(keyOf(target, sessionId));
  }

  /** The existing session, or a new one from `create`; throws SessionLimitError when a new one would exceed the cap. */
  open(target: string, sessionId: string, create: () => S): SessionEntry<S> {
    const key = keyOf(target, sessionId);
    const existing = this.entries.get(key);
    if (existing) {
      existing.lastUsedAt = this.options.now();
      return existing;
    }
    if (this.options.maxSessions > 0 && this.entries.size >= this.options.maxSessions) {
      this.evictLeastRecentlyUsed();
    }
    const now = this.options.now();
    const entry: SessionEntry<S> = { target, sessionId, session: create(), createdAt: now, lastUsedAt: now };
    this.entries.set(key, entry);
    this.ensureSweeper();
    return entry;
  }

  /** Closes the idle session unused the longest; throws SessionLimitError when every session is busy. */
  private evictLeastRecentlyUsed(): void {
    let victim: SessionEntry<S> | undefined;
    for (const entry of this.entries.values()) {
      if (entry.session.busy) continue;
      if (!victim || entry.lastUsedAt < victim.lastUsedAt) victim = entry;
    }
    if (!victim) throw new SessionLimitError(this.options.maxSessions);
    this.remove(victim.target, victim.sessionId, victim.session);
    this.options.onEvicted?.(victim.target, victim.sessionId);
    // Closing may take a kill grace period; the new session does not wait for it.
    victim.session.close('evicted').catch(() => undefined);
  }

  touch(target: string, sessionId: string): void {
    const entry = this.entries.get(keyOf(target, sessionId));
    if (entry) entry.lastUsedAt = this.options.now();
  }

  /** Forgets the session only if it is still `session` (a replaced session is left alone). Does not close it. */
  remove(target: string, sessionId: string, session?: S): SessionEntry<S> | undefined {
    const key = keyOf(target, sessionId);
    const entry = this.entries.get(key);
    if (!entry || (session && entry.session !== session)) return undefined;
    this.entries.delete(key);
    if (this.entries.size === 0) this.stopSweeper();
    return entry;
  }

  /** Live sessions in creation order. */
  list(): Array<SessionEntry<S>> {
    return [...this.entries.values()];
  }

  /** Closes sessions unused for longer than the TTL (never a busy one). Returns how many were closed. */
  async expireIdle(): Promise<number> {
    if (this.options.idleTtlMs <= 0) return 0;
    const now = this.options.now();
    const expired = this.list().filter(
      (entry) => !entry.session.busy && now - entry.lastUsedAt >= this.options.idleTtlMs,
    );
    for (const entry of expired) {
      this.remove(entry.target, entry.sessionId, entry.session);
      this.options.onExpired?.(entry.target, entry.sessionId);
    }
    await Promise.all(expired.map((entry) => entry.session.close('idle-ttl')));
    return expired.length;
  }

  async closeAll(reason: string): Promise<void> {
    const all = this.list();
    this.entries.clear();
    this.stopSweeper();
    await Promise.all(all.map((entry) => entry.session.close(reason)));
  }

  private ensureSweeper(): void {
    if (this.sweeper || this.options.idleTtlMs <= 0) return;
    const period = Math.min(Math.max(Math.floor(this.options.idleTtlMs / 2), 50), 30_000);
    // A sweep every `period`: each fired sweep sets the next (the clock has one-shot timers only).
    const sweep = () => {
      this.sweeper = systemClock.setTimeout(sweep, period);
      void this.expireIdle();
    };
    this.sweeper = systemClock.setTimeout(sweep, period);
  }

  private stopSweeper(): void {
    if (this.sweeper) systemClock.clearTimeout(this.sweeper);
    this.sweeper = undefined;
  }
}

function keyOf(target: string, sessionId: string): string {
  return `${target}\u0000${sessionId}`;
}
