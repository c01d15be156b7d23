// Everything an adapter has in flight (runs, commands, probes), so `close()` can abort it all at once. Each
// entry links the caller's signal to its own controller; `release()` is idempotent and drops the entry.
export interface InflightEntry {
  /** Aborted when the caller aborts or the adapter closes. */
  readonly signal: AbortSignal;
  release(): void;
}

export class InflightSet {
  private readonly entries = new Set<AbortController>();
  private closedReason: string | undefined;

  get size(): number {
    return this.entries.size;
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  track(callerSignal: AbortSignal): InflightEntry {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(callerSignal.reason);
    if (this.closedReason !== undefined) controller.abort(this.closedReason);
    else if (callerSignal.aborted) controller.abort(callerSignal.reason);
    else callerSignal.addEventListener('abort', onAbort, { once: true });
    this.entries.add(controller);
    let released = false;
    return {
      signal: controller.signal,
      release: () => {
        if (released) return;
        released = true;
        callerSignal.removeEventListener('abort', onAbort);
        this.entries.delete(controller);
      },
    };
  }

  /** Aborts every entry with `reason`; later entries start aborted. */
  closeAll(reason: string): void {
    this.closedReason ??= reason;
    for (const controller of this.entries) controller.abort(reason);
  }
}
