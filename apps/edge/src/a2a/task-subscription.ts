// One live subscription to a task's events (a `message/stream` or `tasks/resubscribe` call), bounded on both
// sides: a task accepts at most MAX_LISTENERS_PER_TASK subscriptions (more are refused with a JSON-RPC error), and
// a subscription buffers at most MAX_QUEUED_EVENTS events its client has not taken yet. A client that falls that
// far behind (it reads slower than the run produces) loses the subscription with an error event and may
// resubscribe to get the task's current state; the run itself is not affected.
import type { StreamEvent } from './a2a-types.js';
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';

export const MAX_LISTENERS_PER_TASK = 16;
export const MAX_QUEUED_EVENTS = 1024;

type Listener = (event: StreamEvent) => void;

export class TaskSubscription {
  private readonly queue: StreamEvent[] = [];
  private head = 0;
  private overflowed = false;
  private wake: (() => void) | undefined;
  private readonly listener: Listener = (event) => {
    if (this.overflowed) return;
    if (this.queue.length - this.head >= this.maxQueued) {
      this.overflowed = true;
    } else {
      this.queue.push(event);
    }
    this.notify();
  };

  /** Subscribes to `listeners`; throws JsonRpcError when the task already has `maxListeners` subscriptions. */
  constructor(
    private readonly listeners: Set<Listener>,
    private readonly maxQueued = MAX_QUEUED_EVENTS,
    maxListeners = MAX_LISTENERS_PER_TASK,
  ) {
    if (listeners.size >= maxListeners) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidRequest,
        `too many subscriptions to this task (at most ${maxListeners}); close one and retry`,
      );
    }
    listeners.add(this.listener);
  }

  /** The next event, or undefined once `signal` aborted. Throws JsonRpcError when the client fell too far behind. */
  async next(signal: AbortSignal): Promise<StreamEvent | undefined> {
    for (;;) {
      if (this.head < this.queue.length) {
        const event = this.queue[this.head];
        this.head += 1;
        if (this.head === this.queue.length) {
          this.queue.length = 0;
          this.head = 0;
        }
        return event;
      }
      if (this.overflowed) {
        throw new JsonRpcError(
          JSON_RPC_ERRORS.internalError,
          `the client fell more than ${this.maxQueued} events behind; resubscribe to continue`,
        );
      }
      if (signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Ends the subscription (idempotent). */
  close(): void {
    this.listeners.delete(this.listener);
    this.notify();
  }

  private notify(): void {
    this.wake?.();
  }
}
