// Time and timers as a dependency, so the link's heartbeat, handshake and retry timing can be driven by tests.
export interface TimerHandle {
  unref?(): unknown;
}

export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => {
    if (handle) clearTimeout(handle as NodeJS.Timeout);
  },
};

/** Resolves after `ms`, or at once when the signal aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(handle);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const handle = clock.setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
