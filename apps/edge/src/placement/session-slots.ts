// Session slots for runs that ask for one (`{ kind: 'slot' }`, the OpenAI surface). The OpenAI API is stateless,
// but a CLI target keeps one worker process per session and refuses a second run on a busy session. Each run
// therefore takes the lowest free slot of its node/adapter/target and base id (each principal has a base of its
// own, see @iop/wire session-owner.ts): slot 0 is the base id, slot n is `<base>-<n+1>`. Concurrent runs never
// share a session, and later runs reuse the warm ones. A slot is held until the run settles.

export interface SessionSlot {
  readonly sessionId: string;
  /** Frees the slot. Idempotent. */
  release(): void;
}

export class SessionSlots {
  private readonly busy = new Map<string, TargetSlots>();

  acquire(node: string, adapter: string, target: string, base: string): SessionSlot {
    const key = `${node}\u0000${adapter}\u0000${target}\u0000${base}`;
    let slots = this.busy.get(key);
    if (!slots) {
      slots = { next: 0, free: [], held: 0 };
      this.busy.set(key, slots);
    }
    // The lowest free slot: every freed slot is below `next`, so the heap's minimum when it has one.
    const slot = slots.free.length > 0 ? popMin(slots.free) : slots.next++;
    slots.held += 1;
    let released = false;
    const held = slots;
    return {
      sessionId: slot === 0 ? base : `${base}-${slot + 1}`,
      release: () => {
        if (released) return;
        released = true;
        held.held -= 1;
        if (held.held > 0) pushHeap(held.free, slot);
        else if (this.busy.get(key) === held) this.busy.delete(key);
      },
    };
  }

  /** Slots held across all targets (tests). */
  get held(): number {
    let count = 0;
    for (const slots of this.busy.values()) count += slots.held;
    return count;
  }
}

/** One target's slots: handed out up to `next`, the freed ones below it in a min-heap (O(log n) per run). */
interface TargetSlots {
  next: number;
  free: number[];
  held: number;
}

function pushHeap(heap: number[], value: number): void {
  heap.push(value);
  let index = heap.length - 1;
  while (index > 0) {
    const parent = (index - 1) >> 1;
    if (heap[parent] <= value) break;
    heap[index] = heap[parent];
    index = parent;
  }
  heap[index] = value;
}

function popMin(heap: number[]): number {
  const min = heap[0];
  const last = heap.pop() as number;
  if (heap.length === 0) return min;
  let index = 0;
  for (;;) {
    const left = index * 2 + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && heap[right] < heap[left] ? right : left;
    if (heap[child] >= last) break;
    heap[index] = heap[child];
    index = child;
  }
  heap[index] = last;
  return min;
}
