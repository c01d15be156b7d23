// A fixed-capacity FIFO ring buffer. Used wherever the edge buffers for a reader that may lag (event bus
// subscribers, run handles): memory stays bounded and push/shift are O(1).

export class BoundedQueue<T> {
  private readonly items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be ≥ 1, got ${capacity}`);
    this.items = new Array<T | undefined>(capacity);
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
    this.items[(this.head + this.count) % this.capacity] = item;
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
    this.head = (this.head + 1) % this.capacity;
    this.count -= 1;
    return item;
  }

  toArray(): T[] {
    const result: T[] = [];
    for (let index = 0; index < this.count; index += 1) {
      result.push(this.items[(this.head + index) % this.capacity] as T);
    }
    return result;
  }

  clear(): void {
    this.items.fill(undefined);
    this.head = 0;
    this.count = 0;
  }
}
