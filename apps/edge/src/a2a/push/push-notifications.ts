// A2A push notifications over the run registry's tasks: the config methods (only the task's owner may set, read
// or delete a task's configs; another key's task is "task not found"), and the watch that turns a configured
// task's status changes into queued notifications (push-store.ts outbox, sent by push-outbox.ts). A task is
// watched through a registry subscription while it runs; its terminal notification is queued once, when it ends.
// start() picks up what an earlier process left: a configured task that ended (an interrupted one included, which
// the registry's restore made `failed`) without its terminal notification queued gets it queued now; configs of
// tasks the registry no longer holds are forgotten.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logging.js';
import type { RunKey, RunRegistry } from '../../service/run-registry.js';
import { TERMINAL_STATES, type Task } from '../a2a-types.js';
import { JSON_RPC_ERRORS, JsonRpcError } from '../json-rpc.js';
import type { PushConfig } from './push-config.js';
import type { PushMetrics } from './push-metrics.js';
import type { PushOutbox } from './push-outbox.js';
import { pushPayload } from './push-payload.js';
import type { PushStore, PushTaskKey } from './push-store.js';
import { PushTargetError, type PushTargetCheck } from './push-target.js';

/** Configs one task may have. */
export const MAX_CONFIGS_PER_TASK = 10;
const KIND = 'a2a.task';

export interface PushNotificationsOptions {
  store: PushStore;
  registry: RunRegistry;
  outbox: PushOutbox;
  check: PushTargetCheck;
  metrics: PushMetrics;
  clock: Clock;
  logger: Logger;
}

export class PushNotifications {
  private readonly watching = new Map<string, AbortController>();

  constructor(private readonly options: PushNotificationsOptions) {}

  /** Queues what an earlier process left and starts sending. */
  start(): void {
    const { store, registry } = this.options;
    for (const task of store.configuredTasks()) {
      if (!registry.getLocal(keyOf(task))) store.forgetTask(task);
    }
    for (const task of store.unfinishedTasks()) this.watch(task);
    this.options.outbox.start();
  }

  async close(): Promise<void> {
    for (const controller of this.watching.values()) controller.abort();
    this.watching.clear();
    await this.options.outbox.stop();
  }

  /** Refuses a webhook URL the edge would not POST to (invalid params naming why). */
  async checkTarget(config: PushConfig, where: string): Promise<void> {
    try {
      await this.options.check(config.url);
    } catch (error) {
      if (!(error instanceof PushTargetError)) throw error;
      this.options.metrics.delivery('refused');
      throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where}: ${error.message}`, {
        reason: error.reason,
      });
    }
  }

  /**
   * Registers a config of a task the caller owns (its target already checked) and watches the task; an ended
   * task gets its terminal notification at once.
   */
  set(principal: string, config: PushConfig): PushConfig {
    const task = { principal, taskId: config.taskId };
    this.requireTask(task);
    const existing = this.options.store.listConfigs(principal, config.taskId);
    if (existing.length >= MAX_CONFIGS_PER_TASK && !existing.some((entry) => entry.id === config.id)) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidParams,
        `task ${config.taskId} already has ${MAX_CONFIGS_PER_TASK} push notification configs; delete one first`,
      );
    }
    this.options.store.saveConfig(principal, config);
    this.watch(task);
    return config;
  }

  get(principal: string, taskId: string, configId: string | undefined): PushConfig {
    this.requireTask({ principal, taskId });
    const configs = this.options.store.listConfigs(principal, taskId);
    const found = configId === undefined ? configs[0] : configs.find((config) => config.id === configId);
    if (!found) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidParams,
        `task ${taskId} has no push notification config${configId === undefined ? '' : ` ${configId}`}`,
      );
    }
    return found;
  }

  list(principal: string, taskId: string): PushConfig[] {
    this.requireTask({ principal, taskId });
    return this.options.store.listConfigs(principal, taskId);
  }

  delete(principal: string, taskId: string, configId: string): void {
    this.requireTask({ principal, taskId });
    if (!this.options.store.deleteConfig(principal, taskId, configId)) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidParams,
        `task ${taskId} has no push notification config ${configId}`,
      );
    }
  }

  /** Another key's task is reported exactly like a missing one. */
  private requireTask(task: PushTaskKey): void {
    if (!this.options.registry.getLocal(keyOf(task))) {
      throw new JsonRpcError(JSON_RPC_ERRORS.taskNotFound, `task ${task.taskId} not found`);
    }
  }

  /** Follows the task until it ends (once per task), queueing a notification on each status change. */
  private watch(task: PushTaskKey): void {
    const id = `${task.principal}\u0000${task.taskId}`;
    if (this.watching.has(id)) return;
    const controller = new AbortController();
    this.watching.set(id, controller);
    void this.follow(task, controller.signal)
      .catch((error: unknown) =>
        this.options.logger.error({ taskId: task.taskId, error: String(error) }, 'push watch failed'),
      )
      .finally(() => {
        if (this.watching.get(id) === controller) this.watching.delete(id);
      });
  }

  private async follow(task: PushTaskKey, signal: AbortSignal): Promise<void> {
    const key = keyOf(task);
    const updates = this.options.registry.subscribeLocal(key, signal);
    if (updates) {
      let lastState: string | undefined;
      for await (const update of updates) {
        // Status changes only; an ended task is notified below, once, from its final state.
        if (!('event' in update)) continue;
        const event = update.event as { kind?: string; final?: boolean };
        if (event.kind !== 'status-update' || event.final === true) continue;
        const current = this.options.registry.getLocal(key);
        const state = (current?.state as Task | undefined)?.status.state;
        if (!current || current.ended || state === lastState) continue;
        lastState = state;
        this.enqueue(task, current.state as Task, false);
      }
    }
    if (signal.aborted) return;
    const view = this.options.registry.getLocal(key);
    const final = view?.state as Task | undefined;
    if (view?.ended && final && TERMINAL_STATES.has(final.status.state)) this.enqueue(task, final, true);
  }

  private enqueue(task: PushTaskKey, state: Task, terminal: boolean): void {
    const { store, clock, outbox } = this.options;
    const deliveries = store.listConfigs(task.principal, task.taskId).map((config) => ({
      principal: task.principal,
      taskId: task.taskId,
      configId: config.id,
      url: config.url,
      token: config.token,
      authentication: config.authentication,
      ...pushPayload(state, config.protocol),
    }));
    store.enqueue(deliveries, clock.now(), terminal);
    outbox.wake();
  }
}

function keyOf(task: PushTaskKey): RunKey {
  return { principal: task.principal, kind: KIND, id: task.taskId };
}
