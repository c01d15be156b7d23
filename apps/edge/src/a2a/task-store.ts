// Bounded in-memory store of A2A tasks. Finished tasks live for `finishedTtlMs`, then disappear; when the store
// is full the oldest finished task is evicted first. Running tasks are never evicted: a store full of running
// tasks refuses new ones (the caller answers with a JSON-RPC error) rather than forgetting work in flight.
import { TERMINAL_STATES, type StreamEvent, type Task } from './a2a-types.js';
import type { RunHandle } from '../service/types.js';

export interface TaskRecord {
  task: Task;
  /** When the task reached a terminal state (ms), for the TTL. */
  finishedAtMs?: number;
  handle?: RunHandle;
  /** Principal id of the key that created it ('' = anonymous): other keys see no such task. */
  owner?: string;
  /** Live listeners of streaming and resubscribing calls. */
  listeners: Set<(event: StreamEvent) => void>;
  /** Resolves when the task is terminal. */
  finished: Promise<void>;
  markFinished: () => void;
}

export interface TaskStoreOptions {
  maxTasks: number;
  finishedTtlMs: number;
  now: () => number;
}

export class TaskStoreFullError extends Error {
  override readonly name = 'TaskStoreFullError';
}

export class TaskStore {
  private readonly records = new Map<string, TaskRecord>();

  constructor(private readonly options: TaskStoreOptions) {}

  get size(): number {
    return this.records.size;
  }

  /** Creates the record for a new task; throws TaskStoreFullError when only running tasks fill the store. */
  add(task: Task): TaskRecord {
    this.sweep();
    if (this.records.size >= this.options.maxTasks) this.evictOldestFinished();
    if (this.records.size >= this.options.maxTasks) {
      throw new TaskStoreFullError(`task store is full: ${this.records.size} tasks are still running`);
    }
    let markFinished: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      markFinished = resolve;
    });
    const record: TaskRecord = { task, listeners: new Set(), finished, markFinished };
    this.records.set(task.id, record);
    return record;
  }

  get(id: string): TaskRecord | undefined {
    const record = this.records.get(id);
    if (record && this.isExpired(record)) {
      this.records.delete(id);
      return undefined;
    }
    return record;
  }

  /** Records that the task reached a terminal state; starts its TTL. */
  finish(record: TaskRecord): void {
    if (record.finishedAtMs !== undefined) return;
    record.finishedAtMs = this.options.now();
    record.handle = undefined;
    record.markFinished();
  }

  isTerminal(record: TaskRecord): boolean {
    return TERMINAL_STATES.has(record.task.status.state);
  }

  /** Drops finished tasks past their TTL. */
  sweep(): void {
    for (const [id, record] of this.records) {
      if (this.isExpired(record)) this.records.delete(id);
    }
  }

  private evictOldestFinished(): void {
    for (const [id, record] of this.records) {
      if (record.finishedAtMs !== undefined) {
        this.records.delete(id);
        return;
      }
    }
  }

  private isExpired(record: TaskRecord): boolean {
    return (
      record.finishedAtMs !== undefined &&
      this.options.now() - record.finishedAtMs >= this.options.finishedTtlMs
    );
  }
}
