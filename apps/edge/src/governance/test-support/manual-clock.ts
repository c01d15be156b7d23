// A Clock whose time moves only when a test says so; timers fire in order as time passes them.
import type { Clock, ClockTimer } from '../../clock.js';

export class ManualClock implements Clock {
  private timers = new Map<number, { at: number; callback: () => void }>();
  private nextId = 1;

  constructor(private current = Date.UTC(2026, 0, 15, 12, 0, 0)) {}

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    const id = this.nextId++;
    this.timers.set(id, { at: this.current + ms, callback });
    return id;
  }

  clearTimeout(timer: ClockTimer): void {
    this.timers.delete(timer as number);
  }

  /** Timers not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const due = [...this.timers.entries()]
        .filter(([, timer]) => timer.at <= target)
        .sort((first, second) => first[1].at - second[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.current = due[1].at;
      due[1].callback();
    }
    this.current = target;
  }
}
