// A rolling one-minute sum (requests or tokens) in 60 one-second buckets: fixed memory per principal whatever the
// request rate, accurate to one second. Time comes from the caller (an injected Clock), so tests step it.

const BUCKETS = 60;
const BUCKET_MS = 1000;
/** Length of the window in milliseconds. */

export class SlidingWindow {
  /** The second (epoch ms / 1000, floored) each bucket currently counts; -1 = empty. */
  private readonly seconds = new Array<number>(BUCKETS).fill(-1);
  private readonly amounts = new Array<number>(BUCKETS).fill(0);

  /** Sum of the amounts added in the last minute. */
  total(nowMs: number): number {
    const now = second(nowMs);
    let sum = 0;
    for (let index = 0; index < BUCKETS; index += 1) {
      if (this.live(index, now)) sum += this.amounts[index] ?? 0;
    }
    return sum;
  }

  /** Adds `amount` (may be negative: a correction, never taking a bucket below zero) at `atMs`. */
  add(atMs: number, amount: number): void {
    const at = second(atMs);
    const index = at % BUCKETS;
    if (this.seconds[index] !== at) {
      // A correction for a second that already left the window has nothing left to correct.
      if (amount < 0) return;
      this.seconds[index] = at;
      this.amounts[index] = 0;
    }
    this.amounts[index] = Math.max(0, (this.amounts[index] ?? 0) + amount);
  }

  /**
   * Milliseconds until adding `amount` keeps the total within `limit` (0 = now). An amount larger than the limit
   * on its own waits for the whole window to empty.
   */
  waitMs(nowMs: number, limit: number, amount: number): number {
    const now = second(nowMs);
    let total = this.total(nowMs);
    if (total + amount <= limit) return 0;
    const live: { at: number; amount: number }[] = [];
    for (let index = 0; index < BUCKETS; index += 1) {
      if (this.live(index, now))
        live.push({ at: this.seconds[index] ?? 0, amount: this.amounts[index] ?? 0 });
    }
    live.sort((first, later) => first.at - later.at);
    for (const bucket of live) {
      total -= bucket.amount;
      if (total + amount <= limit) return Math.max(0, (bucket.at + BUCKETS) * BUCKET_MS - nowMs);
    }
    return Math.max(0, ((live.at(-1)?.at ?? now) + BUCKETS) * BUCKET_MS - nowMs);
  }

  private live(index: number, now: number): boolean {
    const at = this.seconds[index] ?? -1;
    return at >= 0 && at > now - BUCKETS && at <= now;
  }
}

function second(ms: number): number {
  return Math.floor(ms / BUCKET_MS);
}
