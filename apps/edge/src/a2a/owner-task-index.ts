// Which tasks each key created on this edge, newest last, for ListTasks (the run registry answers lookups by
// key, not listings). Bounded per owner like the registry itself: the oldest ids are forgotten first, and ids
// whose task the registry has forgotten (evicted or expired) are dropped when a listing meets them.
export const DEFAULT_MAX_TASKS_PER_OWNER = 1000;

export class OwnerTaskIndex {
  private readonly byOwner = new Map<string, string[]>();

  constructor(private readonly maxPerOwner = DEFAULT_MAX_TASKS_PER_OWNER) {}

  add(owner: string, taskId: string): void {
    let ids = this.byOwner.get(owner);
    if (!ids) {
      ids = [];
      this.byOwner.set(owner, ids);
    }
    ids.push(taskId);
    if (ids.length > this.maxPerOwner) ids.splice(0, ids.length - this.maxPerOwner);
  }

  /** The owner's task ids, newest first. */
  newestFirst(owner: string): string[] {
    return [...(this.byOwner.get(owner) ?? [])].reverse();
  }

  /** Forgets ids the registry no longer holds. */
  forget(owner: string, gone: ReadonlySet<string>): void {
    const ids = this.byOwner.get(owner);
    if (!ids || gone.size === 0) return;
    const kept = ids.filter((id) => !gone.has(id));
    if (kept.length === 0) this.byOwner.delete(owner);
    else this.byOwner.set(owner, kept);
  }
}
