// Heartbeats of every registered node connection on one timer. The edge pings each node once per heartbeat
// interval and closes a connection from which nothing at all arrived for the heartbeat timeout. With one timer
// per connection, 10,000 nodes meant 10,000 interval timers waking independently; here one Clock timer ticks
// while any connection is tracked, and each tick costs what it does, not what the fleet size is:
//
// - Pings: entries sit in a FIFO ordered by their last ping (a ping moves an entry to the tail), so a tick pings
//   from the head while the head is due and stops at the first that is not. At most `maxPingsPerTick` go out in
//   one tick (twice the fleet's even share), so a fleet that registered in one burst does not ping in one burst
//   forever: the ones deferred are pinged on the next ticks and keep their later phase from then on.
// - A node that pinged the edge since its entry's last turn is not pinged this turn: an iop-node pings every
//   interval on its own, the edge's pong to that ping already tells it the edge is alive and the ping itself
//   tells the edge the node is, so a second exchange in the other direction only doubles the fleet's heartbeat
//   traffic. A node that does not ping is pinged every interval exactly as before.
// - Deadlines: every `deadlineCheckMs` (a quarter of the timeout, at most the interval) one pass over all entries
//   compares `lastSeenUnixMs` with the timeout; a silent one is removed and its `onTimeout` called once.
//
// An entry is removed by its handle (idempotent), when its link is seen closed, or when it timed out. The timer
// stops when the last entry goes, and `stop()` ends it for good (the transport is stopping).
import type { Clock, ClockTimer } from '../clock.js';

/** What the sweeper needs of a registered node's link. */
export interface HeartbeatTarget {
  readonly closed: boolean;
  /** Last time any frame arrived from the node. */
  readonly lastSeenUnixMs: number;
  /** Last time the node's own heartbeat_ping arrived (undefined: never). */
  readonly lastPingReceivedUnixMs: number | undefined;
  sendHeartbeatPing(seq: number): Promise<void>;
}

export interface HeartbeatSweeperOptions {
  clock: Clock;
  /** How often each node is pinged. */
  intervalMs: number;
  /** A node silent (no frame at all) for longer than this is timed out. */
  timeoutMs: number;
}

export interface HeartbeatHandle {
  /** Stops the heartbeats of this connection. Idempotent. */
  remove(): void;
}

export interface HeartbeatSweeper {
  /**
   * Pings `target` every interval from now on; calls `onTimeout(silentMs)` once (and forgets the target) when it
   * stays silent past the timeout.
   */
  add(target: HeartbeatTarget, onTimeout: (silentMs: number) => void): HeartbeatHandle;
  /** Connections tracked. */
  readonly size: number;
  /** Stops the timer and forgets every connection (no further pings or timeouts). Idempotent. */
  stop(): void;
}

interface Entry {
  readonly target: HeartbeatTarget;
  readonly onTimeout: (silentMs: number) => void;
  lastPingAt: number;
  seq: number;
}

/** Tick length: about 50 ticks per interval (pings spread finely), between 10 ms and 100 ms. */
export function heartbeatTickMs(intervalMs: number): number {
  return Math.max(10, Math.min(100, Math.floor(intervalMs / 50)));
}

export function createHeartbeatSweeper(options: HeartbeatSweeperOptions): HeartbeatSweeper {
  const { clock, intervalMs, timeoutMs } = options;
  const tickMs = heartbeatTickMs(intervalMs);
  // Noticing a silent node close to its deadline, as before the sweeper: a quarter of the timeout.
  const deadlineCheckMs = Math.max(tickMs, Math.min(intervalMs, Math.floor(timeoutMs / 4)));
  /** Insertion order = order of the last ping (or of registration): the head is the most overdue. */
  const entries = new Set<Entry>();
  let timer: ClockTimer | undefined;
  let lastDeadlineCheckAt = clock.now();
  let stopped = false;

  const forget = (entry: Entry): void => {
    entries.delete(entry);
    if (entries.size === 0 && timer !== undefined) {
      clock.clearTimeout(timer);
      timer = undefined;
    }
  };

  const schedule = (): void => {
    if (timer !== undefined || stopped || entries.size === 0) return;
    timer = clock.setTimeout(tick, tickMs);
  };

  const checkDeadlines = (now: number): void => {
    lastDeadlineCheckAt = now;
    for (const entry of entries) {
      if (entry.target.closed) {
        entries.delete(entry);
        continue;
      }
      const silentMs = now - entry.target.lastSeenUnixMs;
      if (silentMs <= timeoutMs) continue;
      entries.delete(entry);
      entry.onTimeout(silentMs);
    }
  };

  const ping = (now: number): void => {
    // Twice the even share of one tick, so a backlog drains within about one interval.
    const maxPingsPerTick = Math.max(16, Math.ceil(((entries.size * tickMs) / intervalMs) * 2));
    let sent = 0;
    for (const entry of entries) {
      if (now - entry.lastPingAt < intervalMs || sent >= maxPingsPerTick) break;
      entries.delete(entry);
      if (entry.target.closed) continue;
      const pingedUs = (entry.target.lastPingReceivedUnixMs ?? -Infinity) > entry.lastPingAt;
      entry.lastPingAt = now;
      entries.add(entry); // to the tail: its next turn is an interval from now
      if (pingedUs) continue;
      entry.seq += 1;
      sent += 1;
      entry.target.sendHeartbeatPing(entry.seq).catch(() => undefined);
    }
  };

  function tick(): void {
    timer = undefined;
    if (stopped) return;
    const now = clock.now();
    if (now - lastDeadlineCheckAt >= deadlineCheckMs) checkDeadlines(now);
    ping(now);
    schedule();
  }

  return {
    add(target, onTimeout) {
      if (stopped) return { remove: () => undefined };
      if (entries.size === 0) lastDeadlineCheckAt = clock.now();
      const entry: Entry = { target, onTimeout, lastPingAt: clock.now(), seq: 0 };
      entries.add(entry);
      schedule();
      return { remove: () => forget(entry) };
    },
    get size() {
      return entries.size;
    },
    stop() {
      stopped = true;
      entries.clear();
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
    },
  };
}
