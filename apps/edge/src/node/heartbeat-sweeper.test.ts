import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { createHeartbeatSweeper, heartbeatTickMs, type HeartbeatTarget } from './heartbeat-sweeper.js';

/** A link as the sweeper sees it: records pings; a test moves `lastSeenUnixMs` as frames "arrive". */
class FakeTarget implements HeartbeatTarget {
  closed = false;
  lastSeenUnixMs: number;
  lastPingReceivedUnixMs: number | undefined;
  readonly pings: { seq: number; at: number }[] = [];

  constructor(private readonly clock: ManualClock) {
    this.lastSeenUnixMs = clock.now();
  }

  sendHeartbeatPing(seq: number): Promise<void> {
    this.pings.push({ seq, at: this.clock.now() });
    return Promise.resolve();
  }

  /** The node answered (or sent anything). */
  heard(): void {
    this.lastSeenUnixMs = this.clock.now();
  }

  /** The node sent its own heartbeat_ping. */
  pinged(): void {
    this.heard();
    this.lastPingReceivedUnixMs = this.clock.now();
  }
}

/** Advances in small steps, letting `each` react at every step (a node answering pings). */
function run(clock: ManualClock, ms: number, each: () => void = () => undefined, stepMs = 10): void {
  for (let elapsed = 0; elapsed < ms; elapsed += stepMs) {
    clock.advance(stepMs);
    each();
  }
}

describe('HeartbeatSweeper', () => {
  it('pings each connection once per interval with increasing seq, on one timer for all of them', () => {
    const clock = new ManualClock();
    const sweeper = createHeartbeatSweeper({ clock, intervalMs: 1000, timeoutMs: 3000 });
    const targets = Array.from({ length: 50 }, () => new FakeTarget(clock));
    for (const target of targets) sweeper.add(target, () => undefined);
    expect(clock.pending).toBe(1);

    const start = clock.now();
    // 50 connections at 16 pings per tick at most: the last ones of a round go out 3 ticks after the first.
    run(clock, 3100, () => targets.forEach((target) => target.heard()));
    for (const target of targets) {
      expect(target.pings.map((ping) => ping.seq)).toEqual([1, 2, 3]);
      expect(target.pings[0].at - start).toBeGreaterThanOrEqual(1000);
      expect(target.pings[1].at - target.pings[0].at).toBe(1000);
    }
    expect(clock.pending).toBe(1);
    sweeper.stop();
  });

  it('times out a silent connection once, after the timeout, and keeps one that answers', () => {
    const clock = new ManualClock();
    const sweeper = createHeartbeatSweeper({ clock, intervalMs: 1000, timeoutMs: 3000 });
    const silent = new FakeTarget(clock);
    const healthy = new FakeTarget(clock);
    const timeouts: { who: string; silentMs: number; at: number }[] = [];
    const start = clock.now();
    sweeper.add(silent, (silentMs) => timeouts.push({ who: 'silent', silentMs, at: clock.now() }));
    sweeper.add(healthy, (silentMs) => timeouts.push({ who: 'healthy', silentMs, at: clock.now() }));

    run(clock, 6000, () => {
      // The healthy node answers each ping as it comes.
      const lastPing = healthy.pings.at(-1);
      if (lastPing !== undefined && healthy.lastSeenUnixMs < lastPing.at) healthy.heard();
    });
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0].who).toBe('silent');
    expect(timeouts[0].silentMs).toBeGreaterThan(3000);
    // Noticed within a quarter of the timeout (plus a tick) of its deadline.
    expect(timeouts[0].at - start).toBeLessThanOrEqual(3000 + 750 + heartbeatTickMs(1000));
    expect(sweeper.size).toBe(1);
    // A timed-out connection is not pinged any more.
    const silentPings = silent.pings.length;
    run(clock, 3000, () => healthy.heard());
    expect(silent.pings).toHaveLength(silentPings);
    sweeper.stop();
  });

  it('does not ping a node that pinged the edge since its last turn, and pings it again once it stops', () => {
    const clock = new ManualClock();
    const sweeper = createHeartbeatSweeper({ clock, intervalMs: 1000, timeoutMs: 3000 });
    const chatty = new FakeTarget(clock);
    const quiet = new FakeTarget(clock);
    sweeper.add(chatty, () => undefined);
    sweeper.add(quiet, () => undefined);
    let nextNodePing = clock.now() + 900;
    run(clock, 5000, () => {
      quiet.heard();
      if (clock.now() >= nextNodePing) {
        chatty.pinged(); // like an iop-node: its own ping every interval
        nextNodePing += 1000;
      }
    });
    expect(chatty.pings).toHaveLength(0);
    expect(quiet.pings.length).toBeGreaterThanOrEqual(4);

    // It stops pinging but still answers: the edge pings it again from its next turn on.
    run(clock, 3000, () => chatty.heard());
    expect(chatty.pings.length).toBeGreaterThanOrEqual(2);
    sweeper.stop();
  });

  it('spreads the pings of a fleet that registered at once over the following ticks', () => {
    const clock = new ManualClock();
    const intervalMs = 1000;
    const sweeper = createHeartbeatSweeper({ clock, intervalMs, timeoutMs: 10_000 });
    const targets = Array.from({ length: 2000 }, () => new FakeTarget(clock));
    for (const target of targets) sweeper.add(target, () => undefined);
    const tickMs = heartbeatTickMs(intervalMs);
    const perTickCap = Math.ceil(((targets.length * tickMs) / intervalMs) * 2);

    run(clock, 4000, () => targets.forEach((target) => target.heard()), tickMs);
    const byTime = new Map<number, number>();
    for (const target of targets)
      for (const ping of target.pings) byTime.set(ping.at, (byTime.get(ping.at) ?? 0) + 1);
    expect(Math.max(...byTime.values())).toBeLessThanOrEqual(perTickCap);
    // Everyone is still pinged about once per interval.
    for (const target of targets) expect(target.pings.length).toBeGreaterThanOrEqual(2);
    sweeper.stop();
  });

  it('forgets removed and closed connections and stops its timer when none is left', () => {
    const clock = new ManualClock();
    const sweeper = createHeartbeatSweeper({ clock, intervalMs: 100, timeoutMs: 300 });
    const removed = new FakeTarget(clock);
    const closed = new FakeTarget(clock);
    const handle = sweeper.add(removed, () => {
      throw new Error('a removed connection must not time out');
    });
    sweeper.add(closed, () => {
      throw new Error('a closed connection must not time out');
    });
    handle.remove();
    handle.remove();
    closed.closed = true;
    run(clock, 1000);
    expect(removed.pings).toHaveLength(0);
    expect(closed.pings).toHaveLength(0);
    expect(sweeper.size).toBe(0);
    expect(clock.pending).toBe(0);

    sweeper.add(new FakeTarget(clock), () => undefined);
    expect(clock.pending).toBe(1);
    sweeper.stop();
    expect(clock.pending).toBe(0);
    expect(sweeper.size).toBe(0);
    // After stop nothing is tracked again.
    sweeper.add(new FakeTarget(clock), () => undefined);
    expect(clock.pending).toBe(0);
  });
});
