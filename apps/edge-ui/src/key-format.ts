// How the Keys view writes a key's figures: its name, its limits and what is left of its budget.
import type { UiKey, UiKeyBudget } from '@iop/ui-api';

/** The key's id; the runs made without a key are "(anonymous)". */
export function keyName(key: Pick<UiKey, 'id'>): string {
  return key.id === '' ? '(anonymous)' : key.id;
}

/** "60 rpm · 10,000 tpm · 2 at once", or "unlimited" when the key has no limit. */
export function keyLimits(key: Pick<UiKey, 'rpm' | 'tpm' | 'max_concurrent'>): string {
  const parts = [
    key.rpm === null ? '' : `${key.rpm.toLocaleString()} rpm`,
    key.tpm === null ? '' : `${key.tpm.toLocaleString()} tpm`,
    key.max_concurrent === null ? '' : `${key.max_concurrent.toLocaleString()} at once`,
  ].filter((part) => part !== '');
  return parts.length === 0 ? 'unlimited' : parts.join(' · ');
}

/** "450 of 1,000 left today (45 %)"; "no budget" without one. */
export function budgetLeft(budget: UiKeyBudget | null): string {
  if (!budget) return 'no budget';
  const share = budget.tokens > 0 ? Math.floor((100 * budget.left) / budget.tokens) : 0;
  const window = budget.per === 'day' ? 'today' : 'this month';
  return `${budget.left.toLocaleString()} of ${budget.tokens.toLocaleString()} left ${window} (${share} %)`;
}

/** The share of the budget used, 0..1, for the bar (1 when spent). */
export function budgetUsedShare(budget: UiKeyBudget): number {
  if (budget.tokens <= 0) return 1;
  return Math.min(1, Math.max(0, budget.used / budget.tokens));
}
