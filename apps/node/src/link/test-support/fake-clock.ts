// A Clock whose time only moves when the test advances it: timers fire in due order during `advance(ms)`.
import type { Clock, TimerHandle } from '../clock.js';

interface Timer extends TimerHandle {
  due: number;
  seq: number;
  callback: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<Timer>();

  constructor(start = 1_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: Timer = { due: this.#now + Math.max(0, ms), seq: (this.#seq += 1), callback };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.#timers.delete(handle as Timer);
  }

  /** Delays (from now) of the timers still pending, soonest first. */
  pending(): number[] {
    return [...this.#timers].map((timer) => timer.due - this.#now).sort((left, right) => left - right);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way (in due order). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = [...this.#timers]
        .filter((timer) => timer.due <= end)
        .sort((left, right) => left.due - right.due || left.seq - right.seq)[0];
      if (!next) break;
      this.#timers.delete(next);
      this.#now = next.due;
      next.callback();
    }
    this.#now = end;
  }
}
