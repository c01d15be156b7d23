import { describe, expect, it } from '@jest/globals';
import { budgetLeft, budgetUsedShare, keyLimits, keyName } from './key-format.js';

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
