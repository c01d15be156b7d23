import { describe, expect, it } from '@jest/globals';
import { age, budgetLeft, budgetUsedShare, bytes, count, duration, keyLimits, keyName } from './format.js';

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

const budget = {
  tokens: 1000,
  per: 'day' as const,
  window_start_ms: 0,
  window_end_ms: 86_400_000,
  used: 550,
  left: 450,
};

describe('Keys view formatting', () => {
  it('names a key by its id and the keyless runs "(anonymous)"', () => {
    expect(keyName({ id: 'team-a' })).toBe('team-a');
    expect(keyName({ id: '' })).toBe('(anonymous)');
  });

  it('lists the limits a key has, and says unlimited when it has none', () => {
    expect(keyLimits({ rpm: 60, tpm: 10_000, max_concurrent: 2 })).toBe(
      `60 rpm · ${(10_000).toLocaleString()} tpm · 2 at once`,
    );
    expect(keyLimits({ rpm: null, tpm: 500, max_concurrent: null })).toBe('500 tpm');
    expect(keyLimits({ rpm: null, tpm: null, max_concurrent: null })).toBe('unlimited');
  });

  it('writes the budget left in its window with the share, rounding the share down', () => {
    expect(budgetLeft(budget)).toBe(`450 of ${(1000).toLocaleString()} left today (45 %)`);
    expect(budgetLeft({ ...budget, per: 'month', used: 1, left: 999 })).toBe(
      `999 of ${(1000).toLocaleString()} left this month (99 %)`,
    );
    expect(budgetLeft(null)).toBe('no budget');
  });

  it('fills the budget bar by the share used, full when spent or overspent', () => {
    expect(budgetUsedShare(budget)).toBe(0.55);
    expect(budgetUsedShare({ ...budget, used: 1200, left: 0 })).toBe(1);
    expect(budgetUsedShare({ ...budget, tokens: 0 })).toBe(1);
  });
});
