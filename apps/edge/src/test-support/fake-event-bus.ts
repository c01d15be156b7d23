// Test support: an EventBus with unbounded per-subscriber queues (no replay, no drops), and the small async queue
// it and the fake edge service use. Implements the real interfaces; for in-process tests only.
import type { EdgeEvent, EventBus, EventSubscription, SubscribeOptions } from '../events/types.js';

/** An unbounded async queue: push values, end it, iterate it once. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;

  push(item: T): void {
    if (this.ended) return;
    const waiter = this.waiting;
    if (waiter) {
      this.waiting = undefined;
      waiter({ value: item, done: false });
    } else this.items.push(item);
  }

  end(): void {
    this.ended = true;
    const waiter = this.waiting;
    this.waiting = undefined;
    waiter?.({ value: undefined, done: true });
  }

  get isEnded(): boolean {
    return this.ended;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: () => {
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

export class FakeEventBus implements EventBus {
  readonly subscriptions = new Set<AsyncQueue<EdgeEvent>>();

  publish(event: EdgeEvent): void {
    for (const queue of this.subscriptions) queue.push(event);
  }

  subscribe(options?: SubscribeOptions): EventSubscription {
    const queue = new AsyncQueue<EdgeEvent>();
    this.subscriptions.add(queue);
    const close = (): void => {
      queue.end();
      this.subscriptions.delete(queue);
    };
    options?.signal?.addEventListener('abort', close, { once: true });
    if (options?.signal?.aborted) close();
    return {
      dropped: 0,
      close,
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }
}
