// The durable side of push notifications: the configs clients registered per task (keyed by the owner's principal,
// so another key's task has none) and the outbox of notifications not delivered yet. A notification is written to
// the outbox before any attempt, so an edge restart between a task's state change and its delivery sends it after
// the restart. Implemented in SQLite (sqlite-push-store.ts, `<data_dir>/a2a-push.db`) and in memory for tests
// (../test-support/memory-push-store.ts).
import type { PushAuthentication, PushConfig } from './push-config.js';

/** A task by owner: the principal id ('' = anonymous) and the task id. */
export interface PushTaskKey {
  principal: string;
  taskId: string;
}

/** A notification to queue for one config. */
export interface NewPushDelivery {
  principal: string;
  taskId: string;
  configId: string;
  url: string;
  token?: string | undefined;
  authentication?: PushAuthentication | undefined;
  contentType: string;
  body: string;
}

/** A queued notification. */
export interface PushDelivery extends NewPushDelivery {
  id: number;
  /** Attempts made so far. */
  attempts: number;
  /** When it was queued (epoch ms): the retry window counts from here. */
  queuedAt: number;
  /** When the next attempt is due (epoch ms). */
  dueAt: number;
}

export interface PushStore {
  /** Adds or replaces a config (same task and id). */
  saveConfig(principal: string, config: PushConfig): void;
  getConfig(principal: string, taskId: string, configId: string): PushConfig | undefined;
  /** The task's configs, oldest first. */
  listConfigs(principal: string, taskId: string): PushConfig[];
  /** Removes a config and its undelivered notifications; false when there was none. */
  deleteConfig(principal: string, taskId: string, configId: string): boolean;
  /** Tasks with a config whose terminal notification has not been queued yet. */
  unfinishedTasks(): PushTaskKey[];
  /** Every task that has configs. */
  configuredTasks(): PushTaskKey[];
  /** Forgets a task's configs and undelivered notifications. */
  forgetTask(task: PushTaskKey): void;
  /**
   * Queues notifications in one transaction, each replacing its config's undelivered older one (the newer carries
   * the whole task); `terminal` marks their configs as having their terminal notification queued, and skips a
   * config whose terminal notification was queued already.
   */
  enqueue(deliveries: readonly NewPushDelivery[], now: number, terminal: boolean): void;
  /** Notifications due at `now`, earliest first, at most `limit`. */
  due(now: number, limit: number): PushDelivery[];
  /** When the earliest queued notification is due; undefined when none is. */
  nextDueAt(): number | undefined;
  /** Records a failed attempt and when to try again. */
  reschedule(id: number, attempts: number, dueAt: number): void;
  /** Removes a notification (delivered or given up). */
  remove(id: number): void;
  close(): Promise<void>;
}
