import { describe, expect, it } from '@jest/globals';
import { SlidingWindow } from './sliding-window.js';

const T0 = 1_700_000_000_000;

describe('SlidingWindow', () => {
  it('sums what was added in the last 60 seconds and forgets older buckets', () => {
    const window = new SlidingWindow();
    window.add(T0, 3);
    window.add(T0 + 30_000, 4);
    expect(window.total(T0 + 30_000)).toBe(7);
    expect(window.total(T0 + 59_999)).toBe(7);
    expect(window.total(T0 + 60_000)).toBe(4);
    expect(window.total(T0 + 90_000)).toBe(0);
  });

  it('reuses a bucket slot a minute later without carrying the old amount', () => {
    const window = new SlidingWindow();
    window.add(T0, 5);
    window.add(T0 + 60_000, 1);
    expect(window.total(T0 + 60_000)).toBe(1);
  });

  it('tells how long until an amount fits under the limit', () => {
    const window = new SlidingWindow();
    for (let index = 0; index < 5; index += 1) window.add(T0 + index * 1000, 1);
    expect(window.waitMs(T0 + 10_000, 5, 0)).toBe(0);
    // The oldest request (second 0) leaves the window at T0 + 60 s.
    expect(window.waitMs(T0 + 10_000, 5, 1)).toBe(50_000);
    expect(window.waitMs(T0 + 10_000, 3, 1)).toBe(52_000);
  });

  it('applies negative corrections without going below zero, and ignores them once the second left', () => {
    const window = new SlidingWindow();
    window.add(T0, 10);
    window.add(T0, -4);
    expect(window.total(T0)).toBe(6);
    window.add(T0, -100);
    expect(window.total(T0)).toBe(0);
    window.add(T0 + 61_000, -5);
    expect(window.total(T0 + 61_000)).toBe(0);
  });
});
