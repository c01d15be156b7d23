// The one time source of every app (the edge's pool queues, run deadlines and background responses; the node's
// link heartbeats, reconnects, health probes and discovery), injected so tests control timestamps and timers.
//
// Timers of the system clock never keep the process alive unless asked (`keepAlive`): a pending queue timeout,
// heartbeat or probe must not hold a process open on shutdown. A wait that is the only thing the process is doing
// (the node's pause between reconnect attempts, when no socket is open) asks for keepAlive, or the process would
// exit in the middle of it.

/** Options of one timer. */
export interface TimerOptions {
  /**
   * Keep the process alive while this timer is pending (default false: the timer is unref'd). Only for a wait
   * that nothing else holds the event loop open for.
   */
  keepAlive?: boolean;
}

/**
 * A pending timer of one clock: pass it back to that clock to cancel it (`clearTimeout`).
 *
 * `refresh()` re-arms it for its full delay from now, keeping its callback: a timer that already fired fires
 * again, a cleared one stays cleared. It is the cheap way to push an inactivity deadline back on every chunk of
 * a stream (the system clock moves the one Node timer: no new timer, no new closure).
 */
export interface ClockTimer {
  refresh(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Monotonic milliseconds with sub-millisecond precision (performance.now()), for durations that are reported,
   * such as a run's overhead: `now()` counts whole milliseconds, so a difference of two readings is off by up to
   * 1 ms. Clocks without it (test clocks) measure durations with `now()`.
   */
  monotonicNow?(): number;
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): ClockTimer;
  /** Cancels a pending timer; a fired, cleared or missing (`undefined`) timer is ignored. */
  clearTimeout(timer: ClockTimer | undefined): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicNow: () => performance.now(),
  // A Node Timeout is the ClockTimer itself: its own refresh() re-arms it in place.
  setTimeout: (callback, ms, options) => {
    const timer = setTimeout(callback, ms);
    if (options?.keepAlive !== true) timer.unref();
    return timer;
  },
  clearTimeout: (timer) => {
    if (timer !== undefined) clearTimeout(timer as NodeJS.Timeout);
  },
};

/** Resolves after `ms`, or at once when the signal aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal: AbortSignal, options?: TimerOptions): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms, options);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Calls `work` every `ms` on `clock` (the first call `ms` from now) until the returned stop is called. One timer,
 * re-armed (refreshed) before each call, so a slow `work` does not shift the next tick.
 */
export function repeat(clock: Clock, ms: number, work: () => void, options?: TimerOptions): () => void {
  let stopped = false;
  const timer = clock.setTimeout(
    () => {
      if (stopped) return;
      timer.refresh();
      work();
    },
    ms,
    options,
  );
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}
