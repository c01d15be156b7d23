// The per-run event stream behind RunHandle.events: a bounded single-consumer buffer between the node's read loop
// (push, never blocks) and the surface that iterates it.
//
// Overflow policy: a background run's stream may go unread, so when full it drops its oldest event (the bus
// still carries every event). A foreground stream that overflows means its consumer is stuck: `push` reports it
// and the tracker ends the run with an error (`consumer_overflow`) rather than silently losing output. The
// terminal event always fits (it has its own slot) and ends the iteration. A consumer that stops iterating early
// detaches the stream: later events are discarded instead of buffered.
import { BoundedQueue } from '../events/bounded-queue.js';
import type { RunEvents, RunEventWithMeta } from './types.js';

export type PushResult = 'ok' | 'overflow';

export class RunEventStream implements RunEvents {
  private readonly queue: BoundedQueue<RunEventWithMeta>;
  private terminal: RunEventWithMeta | undefined;
  private ended = false;
  private detached = false;
  private iterating = false;
  private waiter: ((result: IteratorResult<RunEventWithMeta>) => void) | undefined;
  /** The `forEach` consumer and the settling of its `done`. */
  private sink: ((event: RunEventWithMeta) => void) | undefined;
  private settleSink: (() => void) | undefined;

  constructor(
    capacity: number,
    private readonly dropOldest: boolean,
  ) {
    this.queue = new BoundedQueue(capacity);
  }

  /** Buffered events not yet read (tests and diagnostics). */
  get buffered(): number {
    return this.queue.size + (this.terminal ? 1 : 0);
  }

  push(event: RunEventWithMeta): PushResult {
    if (this.ended || this.detached) return 'ok';
    if (this.sink) {
      this.sink(event);
      return 'ok';
    }
    if (this.deliver(event)) return 'ok';
    if (this.dropOldest) {
      this.queue.pushDropOldest(event);
      return 'ok';
    }
    return this.queue.push(event) ? 'ok' : 'overflow';
  }

  /** Adds the run's last event and ends the stream after it. */
  end(event: RunEventWithMeta): void {
    if (this.ended) return;
    this.ended = true;
    if (this.detached) return;
    const sink = this.sink;
    if (sink) {
      sink(event);
      this.detach();
      return;
    }
    if (!this.deliver(event)) this.terminal = event;
  }

  /**
   * The other way to consume the events (single consumer either way): calls `each` synchronously with every
   * event — the buffered ones now, later ones as they are pushed — so a consumer that reads the whole run (a
   * collected answer) pays no promise per event and never falls behind (no overflow). `done` settles after the
   * terminal event, or when `stop()` detaches the stream (later events are then discarded, as after an
   * iterator's return()). `each` must not throw.
   */
  forEach(each: (event: RunEventWithMeta) => void): { done: Promise<void>; stop: () => void } {
    if (this.iterating) throw new Error('run events have a single consumer');
    this.iterating = true;
    const stop = () => this.detach();
    for (let event = this.queue.shift(); event !== undefined; event = this.queue.shift()) each(event);
    const terminal = this.terminal;
    if (terminal) {
      this.terminal = undefined;
      this.detached = true;
      each(terminal);
    }
    if (this.ended || this.detached) return { done: Promise.resolve(), stop };
    const done = new Promise<void>((resolve) => {
      this.settleSink = resolve;
    });
    this.sink = each;
    return { done, stop };
  }

  private deliver(event: RunEventWithMeta): boolean {
    const waiter = this.waiter;
    if (!waiter || this.queue.size > 0) return false;
    this.waiter = undefined;
    waiter({ value: event, done: false });
    return true;
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEventWithMeta> {
    if (this.iterating) throw new Error('run events have a single consumer');
    this.iterating = true;
    return {
      next: () => {
        const event = this.queue.shift();
        if (event) return Promise.resolve({ value: event, done: false });
        const terminal = this.terminal;
        if (terminal) {
          this.terminal = undefined;
          this.detached = true;
          return Promise.resolve({ value: terminal, done: false });
        }
        if (this.ended || this.detached) return Promise.resolve({ value: undefined, done: true });
        if (this.waiter) return Promise.reject(new Error('run events have a single consumer'));
        return new Promise((resolve) => {
          this.waiter = resolve;
        });
      },
      return: () => {
        this.detach();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private detach(): void {
    this.detached = true;
    this.queue.clear();
    this.terminal = undefined;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.({ value: undefined, done: true });
    this.sink = undefined;
    const settle = this.settleSink;
    this.settleSink = undefined;
    settle?.();
  }
}
