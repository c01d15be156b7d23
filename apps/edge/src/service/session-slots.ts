// Session slots for runs that ask for one (`{ kind: 'slot' }`, the OpenAI surface). The OpenAI API is stateless,
// but a CLI target keeps one worker process per session and refuses a second run on a busy session. Each run
// therefore takes the lowest free slot of its node/adapter/target: slot 0 is the base id, slot n is
// `<base>-<n+1>`. Concurrent runs never share a session, and later runs reuse the warm ones. A slot is held until
// the run settles.

export interface SessionSlot {
  readonly sessionId: string;
  /** Frees the slot. Idempotent. */
  release(): void;
}

export class SessionSlots {
  private readonly busy = new Map<string, Set<number>>();

  acquire(node: string, adapter: string, target: string, base: string): SessionSlot {
    const key = `${node}\u0000${adapter}\u0000${target}`;
    let slots = this.busy.get(key);
    if (!slots) {
      slots = new Set();
      this.busy.set(key, slots);
    }
    let slot = 0;
    while (slots.has(slot)) slot += 1;
    slots.add(slot);
    let released = false;
    const held = slots;
    return {
      sessionId: slot === 0 ? base : `${base}-${slot + 1}`,
      release: () => {
        if (released) return;
        released = true;
        held.delete(slot);
        if (held.size === 0 && this.busy.get(key) === held) this.busy.delete(key);
      },
    };
  }

  /** Slots held across all targets (tests). */
  get held(): number {
    let count = 0;
    for (const slots of this.busy.values()) count += slots.size;
    return count;
  }
}
