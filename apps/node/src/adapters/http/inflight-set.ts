// Everything an adapter has in flight (runs, commands, probes: their upstream exchanges), so `close()` can cancel
// it all at once. The set holds the exchanges themselves: no controller or listener of its own per call (a run
// already links its caller's signal to the exchange's controller once).
export interface Cancellable {
  /** Aborts the call with `reason`, as the caller's own abort would. */
  cancel(reason: string): void;
}

export class InflightSet {
  private readonly entries = new Set<Cancellable>();
  private closedReason: string | undefined;

  get size(): number {
    return this.entries.size;
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  /** Tracks `item` until `release(item)`; once closed, an item is cancelled at once instead. */
  add(item: Cancellable): void {
    if (this.closedReason !== undefined) item.cancel(this.closedReason);
    else this.entries.add(item);
  }

  /** Stops tracking `item` (idempotent). */
  release(item: Cancellable): void {
    this.entries.delete(item);
  }

  /** Cancels every tracked item with `reason`; later ones are cancelled as they are added. */
  closeAll(reason: string): void {
    this.closedReason ??= reason;
    for (const item of this.entries) item.cancel(reason);
  }
}
