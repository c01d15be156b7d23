// A Clock whose time moves only when a test says so (`advance`); timers fire in due order as time passes them,
// timers due at the same moment in the order they were set. For tests of both apps; production code takes a
// Clock and never names this class.
import type { Clock, ClockTimer, TimerOptions } from './clock.js';

interface ManualTimer {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
  readonly keepAlive: boolean;
}

export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, ManualTimer>();

  /** Starts at `start` (ms since the epoch; default 2026-01-15T12:00:00Z). */
  constructor(start = Date.UTC(2026, 0, 15, 12, 0, 0)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number, options?: TimerOptions): ClockTimer {
    const id = this.#nextId++;
    this.#timers.set(id, {
      id,
      due: this.#now + Math.max(0, ms),
      callback,
      keepAlive: options?.keepAlive === true,
    });
    return id;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (typeof timer === 'number') this.#timers.delete(timer);
  }

  /** How many timers are neither fired nor cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Delays (from now) of the timers still pending, soonest first. */
  pendingDelays(): number[] {
    return [...this.#timers.values()]
      .map((timer) => timer.due - this.#now)
      .sort((left, right) => left - right);
  }

  /** Delays (from now) of the pending timers that asked to keep the process alive, soonest first. */
  keepAliveDelays(): number[] {
    return [...this.#timers.values()]
      .filter((timer) => timer.keepAlive)
      .map((timer) => timer.due - this.#now)
      .sort((left, right) => left - right);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way (a timer set by a callback too). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.#timers.values()) {
        if (timer.due > end) continue;
        if (!next || timer.due < next.due || (timer.due === next.due && timer.id < next.id)) next = timer;
      }
      if (!next) break;
      this.#timers.delete(next.id);
      this.#now = next.due;
      next.callback();
    }
    this.#now = end;
  }
}
