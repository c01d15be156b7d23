// A fixed-capacity FIFO ring buffer. Used wherever the edge buffers for a reader that may lag (event bus
// subscribers, run handles): memory stays bounded and push/shift are O(1).

export class BoundedQueue<T> {
  /**
   * Backing ring, grown on demand (doubling) up to `capacity`: most queues (one per run handle, capacity 4096)
   * hold a handful of items, so allocating the full capacity per queue would be pure garbage.
   */
  private items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be ≥ 1, got ${capacity}`);
    this.items = new Array<T | undefined>(Math.min(capacity, INITIAL_SLOTS));
  }

  get size(): number {
    return this.count;
  }

  get full(): boolean {
    return this.count === this.capacity;
  }

  /** Appends; returns false (and stores nothing) when full. */
  push(item: T): boolean {
    if (this.count === this.capacity) return false;
    if (this.count === this.items.length) this.grow();
    const slots = this.items.length;
    this.items[(this.head + this.count) % slots] = item;
    this.count += 1;
    return true;
  }

  /** Appends, evicting the oldest item when full; returns true when something was evicted. */
  pushDropOldest(item: T): boolean {
    let evicted = false;
    if (this.count === this.capacity) {
      this.shift();
      evicted = true;
    }
    this.push(item);
    return evicted;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.items.length;
    this.count -= 1;
    return item;
  }

  toArray(): T[] {
    const result: T[] = [];
    const slots = this.items.length;
    for (let index = 0; index < this.count; index += 1) {
      result.push(this.items[(this.head + index) % slots] as T);
    }
    return result;
  }

  clear(): void {
    // Only the occupied slots hold references.
    const slots = this.items.length;
    for (let index = 0; index < this.count; index += 1) this.items[(this.head + index) % slots] = undefined;
    this.head = 0;
    this.count = 0;
  }

  /** Doubles the ring (capped at capacity), laying the items out from slot 0. */
  private grow(): void {
    const next = new Array<T | undefined>(Math.min(this.capacity, this.items.length * 2));
    const slots = this.items.length;
    for (let index = 0; index < this.count; index += 1) next[index] = this.items[(this.head + index) % slots];
    this.items = next;
    this.head = 0;
  }
}

const INITIAL_SLOTS = 8;
