// Run slots for `runtime.max_concurrency`. The limit is read at each acquire because a config refresh can change
// it while runs are in flight (lowering it never cuts running runs short; new ones wait for the count to drop).
export interface RunSlot {
  /** Idempotent. */
  release(): void;
}

export class ConcurrencyLimiter {
  #inUse = 0;

  get inUse(): number {
    return this.#inUse;
  }

  /** A slot, or undefined when `limit` slots are taken. A limit of 0 means unlimited. */
  tryAcquire(limit: number): RunSlot | undefined {
    if (limit > 0 && this.#inUse >= limit) return undefined;
    this.#inUse += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#inUse -= 1;
      },
    };
  }
}
