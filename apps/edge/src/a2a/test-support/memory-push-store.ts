// PushStore in memory: the unit tests' store (the edge uses sqlite-push-store.ts). Same semantics, no durability.
import type { PushConfig } from '../push/push-config.js';
import type { NewPushDelivery, PushDelivery, PushStore, PushTaskKey } from '../push/push-store.js';

interface ConfigEntry {
  principal: string;
  config: PushConfig;
  terminalQueued: boolean;
}

export class MemoryPushStore implements PushStore {
  private readonly configs: ConfigEntry[] = [];
  private readonly deliveries = new Map<number, PushDelivery>();
  private nextId = 1;

  saveConfig(principal: string, config: PushConfig): void {
    const index = this.configs.findIndex((entry) => same(entry, principal, config.taskId, config.id));
    const entry = { principal, config: structuredClone(config), terminalQueued: false };
    // A replaced config moves to the end, as the SQLite store orders by the latest save.
    if (index >= 0) this.configs.splice(index, 1);
    this.configs.push(entry);
  }

  getConfig(principal: string, taskId: string, configId: string): PushConfig | undefined {
    const entry = this.configs.find((candidate) => same(candidate, principal, taskId, configId));
    return entry ? structuredClone(entry.config) : undefined;
  }

  listConfigs(principal: string, taskId: string): PushConfig[] {
    return this.configs
      .filter((entry) => entry.principal === principal && entry.config.taskId === taskId)
      .map((entry) => structuredClone(entry.config));
  }

  deleteConfig(principal: string, taskId: string, configId: string): boolean {
    const index = this.configs.findIndex((entry) => same(entry, principal, taskId, configId));
    if (index < 0) return false;
    this.configs.splice(index, 1);
    for (const [id, delivery] of this.deliveries) {
      if (delivery.principal === principal && delivery.taskId === taskId && delivery.configId === configId)
        this.deliveries.delete(id);
    }
    return true;
  }

  unfinishedTasks(): PushTaskKey[] {
    return distinctTasks(this.configs.filter((entry) => !entry.terminalQueued));
  }

  configuredTasks(): PushTaskKey[] {
    return distinctTasks(this.configs);
  }

  forgetTask(task: PushTaskKey): void {
    for (let index = this.configs.length - 1; index >= 0; index -= 1) {
      const entry = this.configs[index];
      if (entry && entry.principal === task.principal && entry.config.taskId === task.taskId)
        this.configs.splice(index, 1);
    }
    for (const [id, delivery] of this.deliveries) {
      if (delivery.principal === task.principal && delivery.taskId === task.taskId)
        this.deliveries.delete(id);
    }
  }

  enqueue(deliveries: readonly NewPushDelivery[], now: number, terminal: boolean): void {
    for (const delivery of deliveries) {
      const config = this.configs.find((entry) =>
        same(entry, delivery.principal, delivery.taskId, delivery.configId),
      );
      if (terminal && config?.terminalQueued) continue;
      for (const [id, queued] of this.deliveries) {
        if (
          queued.principal === delivery.principal &&
          queued.taskId === delivery.taskId &&
          queued.configId === delivery.configId
        )
          this.deliveries.delete(id);
      }
      const id = this.nextId++;
      this.deliveries.set(id, { ...structuredClone(delivery), id, attempts: 0, queuedAt: now, dueAt: now });
      if (terminal) {
        for (const entry of this.configs) {
          if (same(entry, delivery.principal, delivery.taskId, delivery.configId))
            entry.terminalQueued = true;
        }
      }
    }
  }

  due(now: number, limit: number): PushDelivery[] {
    return [...this.deliveries.values()]
      .filter((delivery) => delivery.dueAt <= now)
      .sort((a, b) => a.dueAt - b.dueAt || a.id - b.id)
      .slice(0, limit)
      .map((delivery) => structuredClone(delivery));
  }

  nextDueAt(): number | undefined {
    let earliest: number | undefined;
    for (const delivery of this.deliveries.values()) {
      if (earliest === undefined || delivery.dueAt < earliest) earliest = delivery.dueAt;
    }
    return earliest;
  }

  reschedule(id: number, attempts: number, dueAt: number): void {
    const delivery = this.deliveries.get(id);
    if (delivery) this.deliveries.set(id, { ...delivery, attempts, dueAt });
  }

  remove(id: number): void {
    this.deliveries.delete(id);
  }

  /** Queued notifications (tests). */
  get queued(): number {
    return this.deliveries.size;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function same(entry: ConfigEntry, principal: string, taskId: string, configId: string): boolean {
  return entry.principal === principal && entry.config.taskId === taskId && entry.config.id === configId;
}

function distinctTasks(entries: readonly ConfigEntry[]): PushTaskKey[] {
  const seen = new Map<string, PushTaskKey>();
  for (const entry of entries) {
    seen.set(`${entry.principal}\u0000${entry.config.taskId}`, {
      principal: entry.principal,
      taskId: entry.config.taskId,
    });
  }
  return [...seen.values()];
}
