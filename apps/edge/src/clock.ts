// The one time source of the edge (pool queues, run deadlines, background responses), injected so tests control
// timestamps and timers.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Monotonic milliseconds with sub-millisecond precision (performance.now()), for durations that are reported,
   * such as a run's overhead: `now()` counts whole milliseconds, so a difference of two readings is off by up to
   * 1 ms. Clocks without it (test clocks) measure durations with `now()`.
   */
  monotonicNow?(): number;
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

/** Opaque timer handle. */
export type ClockTimer = object | number;

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicNow: () => performance.now(),
  setTimeout: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    // A pending queue timeout must never keep the process alive on shutdown.
    timer.unref();
    return timer;
  },
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};
