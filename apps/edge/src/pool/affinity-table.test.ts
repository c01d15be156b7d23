import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { AffinityTable } from './affinity-table.js';

describe('AffinityTable', () => {
  it('remembers the provider that served a key last', () => {
    const table = new AffinityTable({ maxEntries: 10, ttlMs: 1000, clock: new ManualClock() });
    expect(table.get('conv-1')).toBeUndefined();
    table.set('conv-1', 'a');
    expect(table.get('conv-1')).toBe('a');
    table.set('conv-1', 'b');
    expect(table.get('conv-1')).toBe('b');
    expect(table.size).toBe(1);
  });

  it('forgets an entry not used for ttl_ms', () => {
    const clock = new ManualClock();
    const table = new AffinityTable({ maxEntries: 10, ttlMs: 1000, clock });
    table.set('conv-1', 'a');
    clock.advance(999);
    expect(table.get('conv-1')).toBe('a');
    table.set('conv-1', 'a');
    clock.advance(999);
    // Re-recorded 999 ms ago: still fresh.
    expect(table.get('conv-1')).toBe('a');
    clock.advance(1);
    expect(table.get('conv-1')).toBeUndefined();
    expect(table.size).toBe(0);
  });

  it('keeps at most max_entries, dropping the least recently used first', () => {
    const clock = new ManualClock();
    const table = new AffinityTable({ maxEntries: 3, ttlMs: 60_000, clock });
    for (const key of ['k1', 'k2', 'k3']) {
      table.set(key, 'a');
      clock.advance(1);
    }
    table.set('k1', 'b'); // k1 becomes the most recently used
    table.set('k4', 'a');
    expect(table.size).toBe(3);
    expect(table.get('k2')).toBeUndefined();
    expect(table.get('k1')).toBe('b');
    expect(table.get('k3')).toBe('a');
    expect(table.get('k4')).toBe('a');
  });

  it('drops expired entries from the front when recording, so stale keys do not hold the bound', () => {
    const clock = new ManualClock();
    const table = new AffinityTable({ maxEntries: 100, ttlMs: 1000, clock });
    for (let index = 0; index < 50; index += 1) table.set(`old-${index}`, 'a');
    clock.advance(1000);
    table.set('new', 'b');
    expect(table.size).toBe(1);
  });

  it('applies smaller bounds from a refresh at once and forgets providers that left', () => {
    const clock = new ManualClock();
    const table = new AffinityTable({ maxEntries: 10, ttlMs: 60_000, clock });
    for (let index = 0; index < 10; index += 1) table.set(`k${index}`, index % 2 === 0 ? 'a' : 'b');
    table.resize(4, 60_000);
    expect(table.size).toBe(4);
    expect(table.get('k9')).toBe('b');
    expect(table.get('k5')).toBeUndefined();
    table.forgetProviders((providerId) => providerId !== 'b');
    expect(table.size).toBe(2);
    expect(table.get('k8')).toBe('a');
  });
});
