import { describe, expect, it } from '@jest/globals';
import { BoundedQueue } from './bounded-queue.js';

describe('BoundedQueue', () => {
  it('keeps FIFO order while growing past its initial slots and wrapping around', () => {
    const queue = new BoundedQueue<number>(100);
    const expected: number[] = [];
    let next = 0;
    // Interleave pushes and shifts so the ring wraps before and after it grows.
    for (let round = 0; round < 20; round += 1) {
      for (let index = 0; index < 5; index += 1) {
        expect(queue.push(next)).toBe(true);
        expected.push(next);
        next += 1;
      }
      expect(queue.shift()).toBe(expected.shift());
      expect(queue.toArray()).toEqual(expected);
    }
    expect(queue.size).toBe(80);
    while (expected.length > 0) expect(queue.shift()).toBe(expected.shift());
    expect(queue.shift()).toBeUndefined();
  });

  it('refuses a push at capacity and evicts the oldest with pushDropOldest', () => {
    const queue = new BoundedQueue<number>(20);
    for (let index = 0; index < 20; index += 1) expect(queue.push(index)).toBe(true);
    expect(queue.full).toBe(true);
    expect(queue.push(20)).toBe(false);
    expect(queue.pushDropOldest(20)).toBe(true);
    expect(queue.toArray()).toEqual([...Array(20).keys()].map((index) => index + 1));
  });

  it('clear empties the queue and it is usable again', () => {
    const queue = new BoundedQueue<string>(3);
    queue.push('a');
    queue.push('b');
    queue.shift();
    queue.push('c');
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.shift()).toBeUndefined();
    queue.push('d');
    expect(queue.toArray()).toEqual(['d']);
  });

  it('rejects a capacity below 1', () => {
    expect(() => new BoundedQueue(0)).toThrow(RangeError);
  });
});
