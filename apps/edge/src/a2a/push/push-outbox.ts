// Sends what the push store's outbox holds: each notification as soon as it is due, again with exponential
// backoff after a failed attempt (1 s, 2 s, 4 s, ... capped at MAX_BACKOFF_MS), until it is delivered, the
// webhook refuses it, or it has used `maxAttempts` or outlived `retryWindowMs` since it was queued. One timer (the
// injected clock's) waits for the earliest due notification; at most MAX_IN_FLIGHT attempts run at once. Started
// after the surface restores its tasks, so what an earlier process queued is sent after a restart.
import type { Clock, ClockTimer } from '../../clock.js';
import type { Logger } from '../../logging.js';
import type { PushMetrics } from './push-metrics.js';
import type { PushSender } from './push-sender.js';
import type { PushDelivery, PushStore } from './push-store.js';
import { PushTargetError, type PushTargetCheck } from './push-target.js';

export interface PushOutboxOptions {
  store: PushStore;
  clock: Clock;
  check: PushTargetCheck;
  send: PushSender;
  metrics: PushMetrics;
  logger: Logger;
  maxAttempts: number;
  retryWindowMs: number;
}

const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 5 * 60_000;
const MAX_IN_FLIGHT = 4;

/** The wait after the `attempts`-th failed attempt. */
export function pushBackoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, attempts - 1));
}

export class PushOutbox {
  private timer: ClockTimer | undefined;
  private timerDueAt: number | undefined;
  private readonly inFlight = new Set<number>();
  private readonly running = new Set<Promise<void>>();
  private stopped = true;

  constructor(private readonly options: PushOutboxOptions) {}

  /** Starts sending (what is queued now, then whatever is queued later). */
  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Something was queued: send it when due. */
  wake(): void {
    if (this.stopped) return;
    const dueAt = this.options.store.nextDueAt();
    if (dueAt === undefined) return;
    if (this.timer !== undefined && this.timerDueAt !== undefined && this.timerDueAt <= dueAt) return;
    this.options.clock.clearTimeout(this.timer);
    this.timerDueAt = dueAt;
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerDueAt = undefined;
        this.pump();
      },
      Math.max(0, dueAt - this.options.clock.now()),
    );
  }

  /** Stops scheduling and waits for the attempts in flight (what is still queued stays for the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDueAt = undefined;
    await Promise.allSettled([...this.running]);
  }

  private pump(): void {
    if (this.stopped) return;
    const free = MAX_IN_FLIGHT - this.inFlight.size;
    const due =
      free > 0
        ? this.options.store
            .due(this.options.clock.now(), MAX_IN_FLIGHT * 2)
            .filter((delivery) => !this.inFlight.has(delivery.id))
            .slice(0, free)
        : [];
    for (const delivery of due) {
      this.inFlight.add(delivery.id);
      const attempt = this.attempt(delivery)
        .catch((error: unknown) =>
          this.options.logger.error({ error: String(error), taskId: delivery.taskId }, 'push attempt failed'),
        )
        .finally(() => {
          this.inFlight.delete(delivery.id);
          this.running.delete(attempt);
          this.wake();
        });
      this.running.add(attempt);
    }
    // Nothing to start while attempts run: the end of each attempt wakes the outbox again (no 0 ms timer loop
    // over notifications already in flight).
    if (due.length === 0 && this.inFlight.size === 0) this.wake();
  }

  private async attempt(delivery: PushDelivery): Promise<void> {
    const { store, metrics, logger, clock } = this.options;
    const fields = { taskId: delivery.taskId, configId: delivery.configId, attempt: delivery.attempts + 1 };
    let result;
    try {
      const target = await this.options.check(delivery.url);
      result = await this.options.send({ target, ...delivery });
    } catch (error) {
      if (!(error instanceof PushTargetError)) throw error;
      store.remove(delivery.id);
      metrics.delivery('refused');
      logger.warn({ ...fields, reason: error.message }, 'push notification refused');
      return;
    }
    if (this.stopped && result.kind === 'retry') return;
    switch (result.kind) {
      case 'delivered':
        store.remove(delivery.id);
        metrics.delivery('delivered');
        logger.info({ ...fields, status: result.status }, 'push notification delivered');
        return;
      case 'rejected':
        store.remove(delivery.id);
        metrics.delivery('failed');
        logger.warn({ ...fields, reason: result.reason }, 'push notification rejected by the webhook');
        return;
      case 'retry': {
        const attempts = delivery.attempts + 1;
        const dueAt = clock.now() + pushBackoffMs(attempts);
        if (attempts >= this.options.maxAttempts || dueAt - delivery.queuedAt > this.options.retryWindowMs) {
          store.remove(delivery.id);
          metrics.delivery('failed');
          logger.warn({ ...fields, reason: result.reason }, 'push notification given up');
          return;
        }
        store.reschedule(delivery.id, attempts, dueAt);
        metrics.delivery('retried');
        logger.info(
          { ...fields, reason: result.reason, retryInMs: dueAt - clock.now() },
          'push notification retried',
        );
        return;
      }
      default: {
        const unreachable: never = result;
        throw new Error(`unknown push result ${JSON.stringify(unreachable)}`);
      }
    }
  }
}
