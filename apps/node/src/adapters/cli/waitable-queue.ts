// A small push/pull queue that a run loop can wait on with a timeout and an AbortSignal at the same time. Process
// output and exit notifications are pushed from event callbacks; the run generator pulls them one at a time, so
// every timer (idle timeout, deadline, result grace) is a plain `take(timeoutMs)`.
import { systemClock, type ClockTimer } from '@iop/clock';
export type TakeResult<T> =
  { kind: 'item'; item: T } | { kind: 'timeout' } | { kind: 'aborted' } | { kind: 'closed' };

export class WaitableQueue<T> {
  private items: T[] = [];
  private head = 0;
  private wake: (() => void) | undefined;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.notify();
  }

  /** No more items will come; pending and later takes drain what is left, then answer `closed`. */
  close(): void {
    this.closed = true;
    this.notify();
  }

  get length(): number {
    return this.items.length - this.head;
  }

  /** Waits for the next item; `timeoutMs` undefined or Infinity waits without a timer. */
  async take(timeoutMs: number | undefined, signal?: AbortSignal): Promise<TakeResult<T>> {
    for (;;) {
      if (this.length > 0) return { kind: 'item', item: this.shift() };
      if (signal?.aborted) return { kind: 'aborted' };
      if (this.closed) return { kind: 'closed' };
      if (timeoutMs !== undefined && timeoutMs <= 0) return { kind: 'timeout' };
      const outcome = await this.waitOnce(timeoutMs, signal);
      if (outcome !== 'woken') return { kind: outcome };
    }
  }

  private waitOnce(
    timeoutMs: number | undefined,
    signal?: AbortSignal,
  ): Promise<'woken' | 'timeout' | 'aborted'> {
    return new Promise((resolve) => {
      let timer: ClockTimer | undefined;
      const finish = (outcome: 'woken' | 'timeout' | 'aborted') => {
        if (timer) systemClock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(outcome);
      };
      const onAbort = () => finish('aborted');
      this.wake = () => finish('woken');
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs))
        timer = systemClock.setTimeout(() => finish('timeout'), timeoutMs, { keepAlive: true });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Constant-time removal from the front (Array.shift is linear in the queue length). */
  private shift(): T {
    const item = this.items[this.head];
    this.items[this.head] = undefined as T;
    this.head += 1;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
