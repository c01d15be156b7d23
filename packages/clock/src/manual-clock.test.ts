import { describe, expect, it } from '@jest/globals';
import { ManualClock } from './manual-clock.js';

describe('ManualClock', () => {
  it('moves only when advanced', () => {
    const clock = new ManualClock(5_000);
    expect(clock.now()).toBe(5_000);
    clock.advance(250);
    expect(clock.now()).toBe(5_250);
  });

  it('fires due timers in due order, same-time timers in the order they were set, at their due time', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 30);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push('late'), 31);
    clock.advance(30);
    expect(fired).toEqual(['a@10', 'b@10', 'c@30']);
    expect(clock.pendingDelays()).toEqual([1]);
  });

  it('fires a timer that a callback sets when it falls due within the same advance', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
    }, 5);
    clock.advance(10);
    expect(fired).toEqual([5, 10]);
    expect(clock.pending).toBe(0);
  });

  it('never fires a cleared timer, and ignores clearing twice or clearing nothing', () => {
    const clock = new ManualClock(0);
    let fired = false;
    const timer = clock.setTimeout(() => (fired = true), 10);
    clock.clearTimeout(timer);
    clock.clearTimeout(timer);
    clock.clearTimeout(undefined);
    clock.advance(100);
    expect(fired).toBe(false);
    expect(clock.pending).toBe(0);
  });

  it('treats a negative delay as due now, and tells which timers keep the process alive', () => {
    const clock = new ManualClock(0);
    clock.setTimeout(() => undefined, -5);
    clock.setTimeout(() => undefined, 20, { keepAlive: true });
    expect(clock.pendingDelays()).toEqual([0, 20]);
    expect(clock.keepAliveDelays()).toEqual([20]);
    clock.advance(0);
    expect(clock.pending).toBe(1);
  });

  it('moves a refreshed timer due time to its full delay from the moment of the refresh', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const timer = clock.setTimeout(() => fired.push(clock.now()), 100);
    clock.advance(60);
    timer.refresh();
    expect(clock.pendingDelays()).toEqual([100]);
    clock.advance(99);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([160]);
    expect(clock.pending).toBe(0);
  });

  it('re-arms a fired timer on refresh, and never one that was cleared', () => {
    const clock = new ManualClock(0);
    let fired = 0;
    const timer = clock.setTimeout(() => (fired += 1), 10);
    clock.advance(10);
    timer.refresh();
    clock.advance(10);
    expect(fired).toBe(2);
    clock.clearTimeout(timer);
    timer.refresh();
    clock.advance(100);
    expect(fired).toBe(2);
    expect(clock.pending).toBe(0);
  });

  it('orders a refreshed timer after the timers set before the refresh that fall due with it', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const first = clock.setTimeout(() => fired.push('first'), 10);
    clock.setTimeout(() => fired.push('second'), 10);
    first.refresh();
    clock.advance(10);
    expect(fired).toEqual(['second', 'first']);
  });

  it('fires a timer that refreshes itself once per delay within one advance', () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const timer = clock.setTimeout(() => {
      fired.push(clock.now());
      if (fired.length < 3) timer.refresh();
    }, 7);
    clock.advance(100);
    expect(fired).toEqual([7, 14, 21]);
  });
});
