// What a run or an upstream request needs of a cancellation signal, and a cheap one to create for each.
//
// The run executor needs a signal per run (cancel, deadline, node shutdown) and every upstream exchange one of
// its own (the run's abort, `cancel()`, the inactivity timeout, `dispose()`). An AbortController is an
// EventTarget: creating one and adding and removing a listener cost ~5.7 µs of CPU (measured alone, Node 20);
// profiled, `createAbortSignal` was 5 % of an HTTP client's CPU per call. A `Cancellation` is a plain object with
// the same observable behaviour for the part of AbortSignal our code uses (`AbortSignalLike`, which a real
// AbortSignal satisfies too). Code that hands the signal to an API wanting a real AbortSignal (fetch, child
// processes) converts it with `toAbortSignal`.

/** The part of AbortSignal an HttpClient reads. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  /** Why it was aborted (undefined until then). */
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A one-shot abort signal without EventTarget. Like AbortSignal: each listener runs at most once, in the order
 * added; a listener added after the abort never runs; adding the same listener twice registers it once; an
 * exception thrown by a listener does not stop the others and goes to `onListenerError`, by default rethrown
 * on the next tick as an uncaught exception (as an EventTarget listener's is).
 */
export class Cancellation implements AbortSignalLike {
  constructor(private readonly onListenerError: (error: unknown) => void = rethrowOnNextTick) {}

  private abortedWith: { reason: unknown } | undefined;
  /** Most exchanges have one listener (the HTTP client's): kept without an array until a second one comes. */
  private first: (() => void) | undefined;
  private others: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  addEventListener(type: 'abort', listener: () => void): void {
    if (type !== 'abort' || this.abortedWith !== undefined) return;
    if (this.first === listener || this.others?.includes(listener)) return;
    if (this.first === undefined) this.first = listener;
    else (this.others ??= []).push(listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    if (type !== 'abort') return;
    if (this.first === listener) {
      this.first = this.others?.shift();
      return;
    }
    const index = this.others?.indexOf(listener) ?? -1;
    if (index >= 0) this.others?.splice(index, 1);
  }

  /** Aborts with `reason` (an AbortError when none is given) and runs the listeners. Later calls do nothing. */
  abort(reason?: unknown): void {
    if (this.abortedWith !== undefined) return;
    this.abortedWith = { reason: reason === undefined ? abortError() : reason };
    const listeners = this.first === undefined ? [] : [this.first, ...(this.others ?? [])];
    this.first = undefined;
    this.others = undefined;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}

/**
 * A real AbortSignal following `signal`, for APIs that need one (fetch). Returns `signal` itself when it is one;
 * otherwise the returned signal aborts with the same reason, and `release()` removes the link.
 */
export function toAbortSignal(signal: AbortSignalLike): { signal: AbortSignal; release: () => void } {
  if (signal instanceof AbortSignal) return { signal, release: () => undefined };
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const follow = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, release: () => signal.removeEventListener('abort', follow) };
}

function rethrowOnNextTick(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}

function abortError(): Error {
  const error = new Error('This operation was aborted');
  error.name = 'AbortError';
  return error;
}
