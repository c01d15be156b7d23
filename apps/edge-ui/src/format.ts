// Display helpers: times in the viewer's own time zone, durations and counts with their units, and the Keys
// view's key names, limits and budgets.
import type { UiKey, UiKeyBudget } from '@iop/ui-api';

export function clockTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return '–';
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

export function dateTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms <= 0) return '–';
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function age(nowMs: number, thenMs: number): string {
  if (thenMs <= 0) return '–';
  return `${duration(Math.max(0, nowMs - thenMs))} ago`;
}

export function count(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return '–';
  return `${value.toLocaleString()} ${unit}`;
}

export function bytes(value: number): string {
  if (value <= 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit += 1;
  }
  return `${scaled.toFixed(scaled >= 10 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}

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
