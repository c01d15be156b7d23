import { describe, expect, it } from '@jest/globals';
import { age, bytes, count, duration } from './format.js';

describe('dashboard display helpers', () => {
  it('writes durations with the unit that keeps them short', () => {
    expect(duration(undefined)).toBe('–');
    expect(duration(12.4)).toBe('12 ms');
    expect(duration(1_234)).toBe('1.23 s');
    expect(duration(42_000)).toBe('42.0 s');
    expect(duration(3 * 60_000 + 7_000)).toBe('3 min 7 s');
    expect(duration(2 * 3_600_000 + 5 * 60_000)).toBe('2 h 5 min');
  });

  it('says how long ago, never a negative age, and nothing for an unknown time', () => {
    expect(age(10_000, 4_000)).toBe('6.00 s ago');
    expect(age(10_000, 12_000)).toBe('0 ms ago');
    expect(age(10_000, 0)).toBe('–');
  });

  it('scales bytes by 1024 with one decimal below ten', () => {
    expect(bytes(0)).toBe('–');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(bytes(24 * 1024 ** 3)).toBe('24 GiB');
  });

  it('counts with the unit, and a dash for an unknown count', () => {
    expect(count(null, 'runs')).toBe('–');
    expect(count(3, 'runs')).toBe('3 runs');
  });
});
