// A Clock whose time moves only when a test says so (`advance`); timers fire in due order as time passes them,
// timers due at the same moment in the order they were set (or last refreshed). For tests of both apps;
// production code takes a Clock and never names this class.
import type { Clock, ClockTimer, TimerOptions } from './clock.js';

class ManualTimer implements ClockTimer {
  due = 0;
  /** Order among timers due at the same moment: set anew when the timer is armed or refreshed. */
  order = 0;
  cleared = false;

  constructor(
    private readonly rearm: (timer: ManualTimer) => void,
    readonly delay: number,
    readonly callback: () => void,
    readonly keepAlive: boolean,
  ) {}

  refresh(): void {
    if (!this.cleared) this.rearm(this);
  }
}

export class ManualClock implements Clock {
  #now: number;
  #nextOrder = 1;
  readonly #timers = new Set<ManualTimer>();

  /** Starts at `start` (ms since the epoch; default 2026-01-15T12:00:00Z). */
  constructor(start = Date.UTC(2026, 0, 15, 12, 0, 0)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number, options?: TimerOptions): ClockTimer {
    const timer = new ManualTimer(this.#arm, Math.max(0, ms), callback, options?.keepAlive === true);
    this.#arm(timer);
    return timer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (!(timer instanceof ManualTimer)) return;
    timer.cleared = true;
    this.#timers.delete(timer);
  }

  /** (Re-)arms `timer` for its delay from now: the one place a timer's due time is set. */
  readonly #arm = (timer: ManualTimer): void => {
    timer.due = this.#now + timer.delay;
    timer.order = this.#nextOrder++;
    this.#timers.add(timer);
  };

  /** How many timers are neither fired nor cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Delays (from now) of the timers still pending, soonest first. */
  pendingDelays(): number[] {
    return [...this.#timers].map((timer) => timer.due - this.#now).sort((left, right) => left - right);
  }

  /** Delays (from now) of the pending timers that asked to keep the process alive, soonest first. */
  keepAliveDelays(): number[] {
    return [...this.#timers]
      .filter((timer) => timer.keepAlive)
      .map((timer) => timer.due - this.#now)
      .sort((left, right) => left - right);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way (a timer set by a callback too). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.#timers) {
        if (timer.due > end) continue;
        if (!next || timer.due < next.due || (timer.due === next.due && timer.order < next.order))
          next = timer;
      }
      if (!next) break;
      this.#timers.delete(next);
      this.#now = next.due;
      next.callback();
    }
    this.#now = end;
  }
}
