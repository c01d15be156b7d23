// In-process fan-out of edge events (node lifecycle and run events) to the console, admin API and surfaces.
//
// Overflow policy (why: the publisher is the node transport, which must never wait for a reader):
// - `publish` is synchronous and O(subscribers); it never blocks and never throws because of a subscriber.
// - Every subscriber owns a bounded queue of `queueSize` events. When a subscriber falls behind and its queue is
//   full, the OLDEST undelivered event is dropped to make room and the subscriber's `dropped` counter grows.
//   Fresh events matter more than stale ones to a live console or watch stream; a reader that needs every event
//   checks `dropped` (the admin WatchEvents stream reports it).
// - Until endReplay(), the bus keeps the last `replaySize` events. A subscriber that asks for `replay` first
//   receives those (the newest `queueSize` of them when the queue is smaller), then live events. Replay is for the
//   subscribers that start after the first events (the dashboard, started after the node transport), not durable
//   history: the runtime ends it once its surfaces have started. After that the bus holds an event only until
//   each subscriber's queue gives it up. (Why: a ring of the last 512 events kept alive across every scavenge
//   tripled what the edge's young-generation GC copied and promoted per request — bench/README.md, "the tail".)
// - A subscription ends when `close()` is called, its signal aborts, its iterator is returned (for-await break),
//   or the bus is closed; its queue is released at once.
import type { EdgeEvent, EventBus, EventSubscription, SubscribeOptions } from './types.js';
import { BoundedQueue } from './bounded-queue.js';

export interface EventBusOptions {
  /** Events kept for late subscribers (0 disables replay). */
  replaySize: number;
  /** Undelivered events kept per subscriber before the oldest are dropped (≥ 1). */
  queueSize: number;
}

export const DEFAULT_EVENT_BUS_OPTIONS: EventBusOptions = { replaySize: 256, queueSize: 1024 };

export interface ClosableEventBus extends EventBus {
  /** Live subscriber count (tests and metrics). */
  readonly subscriberCount: number;
  /**
   * Stops keeping events for replay and forgets those kept: call it once every subscriber that asks for a replay
   * has subscribed (the runtime: after the surfaces started). A later `replay` subscription gets live events only.
   */
  endReplay(): void;
  /** Ends every subscription; later publishes are ignored. */
  close(): void;
}

export function createEventBus(options: EventBusOptions = DEFAULT_EVENT_BUS_OPTIONS): ClosableEventBus {
  if (!Number.isInteger(options.replaySize) || options.replaySize < 0) {
    throw new RangeError(`replaySize must be an integer ≥ 0, got ${options.replaySize}`);
  }
  if (!Number.isInteger(options.queueSize) || options.queueSize < 1) {
    throw new RangeError(`queueSize must be an integer ≥ 1, got ${options.queueSize}`);
  }
  const replay = new BoundedQueue<EdgeEvent>(Math.max(options.replaySize, 1));
  let replaying = options.replaySize > 0;
  const subscribers = new Set<Subscriber>();
  let closed = false;

  return {
    get subscriberCount() {
      return subscribers.size;
    },
    publish(event) {
      if (closed) return;
      if (replaying) replay.pushDropOldest(event);
      for (const subscriber of subscribers) subscriber.offer(event);
    },
    subscribe(subscribeOptions: SubscribeOptions = {}) {
      const subscriber = new Subscriber(
        options.queueSize,
        () => subscribers.delete(subscriber),
        subscribeOptions.filter,
      );
      if (closed) {
        subscriber.close();
        return subscriber;
      }
      if (subscribeOptions.replay && replaying) {
        for (const event of replay.toArray()) subscriber.offer(event, false);
      }
      subscribers.add(subscriber);
      const signal = subscribeOptions.signal;
      if (signal) {
        if (signal.aborted) subscriber.close();
        else {
          const onAbort = () => subscriber.close();
          signal.addEventListener('abort', onAbort, { once: true });
          subscriber.onClose(() => signal.removeEventListener('abort', onAbort));
        }
      }
      return subscriber;
    },
    endReplay() {
      replaying = false;
      replay.clear();
    },
    close() {
      closed = true;
      for (const subscriber of [...subscribers]) subscriber.close();
      subscribers.clear();
    },
  };
}

class Subscriber implements EventSubscription {
  private readonly queue: BoundedQueue<EdgeEvent>;
  private waiter: ((result: IteratorResult<EdgeEvent>) => void) | undefined;
  private readonly closeHooks: (() => void)[] = [];
  private droppedCount = 0;
  private closed = false;

  constructor(
    queueSize: number,
    detach: () => void,
    private readonly filter: ((event: EdgeEvent) => boolean) | undefined,
  ) {
    this.queue = new BoundedQueue(queueSize);
    this.closeHooks.push(detach);
  }

  get dropped(): number {
    return this.droppedCount;
  }

  /** Delivers to a waiting reader or queues; `countDrops` is false for replay, which is best effort. */
  offer(event: EdgeEvent, countDrops = true): void {
    if (this.closed) return;
    if (this.filter && !this.filter(event)) return;
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter({ value: event, done: false });
      return;
    }
    if (this.queue.pushDropOldest(event) && countDrops) this.droppedCount += 1;
  }

  onClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.clear();
    for (const hook of this.closeHooks.splice(0)) hook();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<EdgeEvent> {
    return {
      next: () => {
        const event = this.queue.shift();
        if (event !== undefined) return Promise.resolve({ value: event, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        if (this.waiter) return Promise.reject(new Error('an event subscription has a single consumer'));
        return new Promise<IteratorResult<EdgeEvent>>((resolve) => {
          this.waiter = resolve;
        });
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
