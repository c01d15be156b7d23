import { describe, expect, it } from '@jest/globals';
import { LabelTree } from './label-tree.js';

describe('LabelTree', () => {
  const tree = () => new LabelTree(['surface', 'status'], (labels) => ({ labels }));

  it('creates an item once per label set, with its labels by name', () => {
    const items = tree();
    const first = items.get(['openai', '200']);
    expect(items.get(['openai', '200'])).toBe(first);
    expect(first.labels).toEqual({ surface: 'openai', status: '200' });
    expect(items.get(['openai', '429'])).not.toBe(first);
    expect(items.get(['a2a', '200'])).not.toBe(first);
    expect(items.items.map((item) => item.labels.surface + item.labels.status)).toEqual([
      'openai200',
      'openai429',
      'a2a200',
    ]);
  });

  it('does not mix label sets whose joined values would collide', () => {
    const items = tree();
    expect(items.get(['a,b', 'c'])).not.toBe(items.get(['a', 'b,c']));
  });

  it('refuses a wrong number of label values and forgets everything on clear', () => {
    const items = tree();
    expect(() => items.get(['openai'])).toThrow(RangeError);
    const before = items.get(['openai', '200']);
    items.clear();
    expect(items.items).toHaveLength(0);
    expect(items.get(['openai', '200'])).not.toBe(before);
  });
});
