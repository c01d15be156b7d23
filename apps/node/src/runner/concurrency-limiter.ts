// Run slots for `runtime.max_concurrency`. The limit is read at each acquire because a config refresh can change
// it while runs are in flight (lowering it never cuts running runs short; new ones wait for the count to drop).
// A child run (an agent's model call, RunRequest.parent_run_id set) takes no slot: its parent's slot covers the
// node work of the agent and its model calls together (agent-contract/inner/agent-runs.md), so a node full of
// agents never refuses the calls those agents wait on.
export interface RunSlot {
  /** Idempotent. */
  release(): void;
}

export class ConcurrencyLimiter {
  #inUse = 0;

  get inUse(): number {
    return this.#inUse;
  }

  /** The slot of a child run: never refused, not counted in `inUse`. */
  child(): RunSlot {
    return CHILD_SLOT;
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

const CHILD_SLOT: RunSlot = { release: () => undefined };
