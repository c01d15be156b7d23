// Runs async tasks one at a time, in arrival order, with a bounded wait: a task that cannot start within
// `waitMs` fails with RefreshError `refresh_busy` instead of queueing forever behind a stuck one. Config refreshes
// go through one gate so two operators can never interleave a classify-then-apply.
//
// Lifecycle: `close()` rejects every waiter with `refresh_closed`; the task already running finishes normally.
import type { Clock } from '../clock.js';
import { RefreshError } from './errors.js';

export interface SerialGate {
  /** Runs `task` once every earlier task has finished; rejects with `refresh_busy` after waiting `waitMs`. */
  run<T>(task: () => Promise<T>): Promise<T>;
  /** True while a task runs. */
  readonly busy: boolean;
  /** Tasks waiting to start. */
  readonly waiting: number;
  close(): void;
}

interface Waiter {
  start(): void;
  fail(error: RefreshError): void;
}

export function createSerialGate(options: { waitMs: number; label?: string; clock: Clock }): SerialGate {
  const { clock } = options;
  const label = options.label ?? 'task';
  const queue: Waiter[] = [];
  let running = false;
  let closed = false;

  const next = (): void => {
    running = false;
    const waiter = queue.shift();
    if (waiter) {
      running = true;
      waiter.start();
    }
  };

  return {
    run<T>(task: () => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(new RefreshError('refresh_closed', 'the edge is shutting down'));
      const execute = (): Promise<T> => {
        let result: Promise<T>;
        try {
          result = task();
        } catch (error) {
          result = Promise.reject(error instanceof Error ? error : new Error(String(error)));
        }
        return result.finally(next);
      };
      if (!running) {
        running = true;
        return execute();
      }
      return new Promise<T>((resolve, reject) => {
        const timer = clock.setTimeout(() => {
          const index = queue.indexOf(waiter);
          if (index < 0) return;
          queue.splice(index, 1);
          reject(
            new RefreshError(
              'refresh_busy',
              `another ${label} is still running after waiting ${options.waitMs} ms; try again`,
            ),
          );
        }, options.waitMs);
        const waiter: Waiter = {
          start: () => {
            clock.clearTimeout(timer);
            execute().then(resolve, reject);
          },
          fail: (error) => {
            clock.clearTimeout(timer);
            reject(error);
          },
        };
        queue.push(waiter);
      });
    },
    get busy() {
      return running;
    },
    get waiting() {
      return queue.length;
    },
    close() {
      closed = true;
      for (const waiter of queue.splice(0)) {
        waiter.fail(new RefreshError('refresh_closed', 'the edge is shutting down'));
      }
    },
  };
}
