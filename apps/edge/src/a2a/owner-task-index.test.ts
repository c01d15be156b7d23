import { describe, expect, it } from '@jest/globals';
import { OwnerTaskIndex } from './owner-task-index.js';

describe('OwnerTaskIndex', () => {
  it('keeps each owner’s ids apart, newest first, bounded, and forgets gone ids', () => {
    const index = new OwnerTaskIndex(3);
    for (const id of ['a1', 'a2', 'a3', 'a4']) index.add('team-a', id);
    index.add('team-b', 'b1');
    expect(index.newestFirst('team-a')).toEqual(['a4', 'a3', 'a2']);
    expect(index.newestFirst('team-b')).toEqual(['b1']);
    expect(index.newestFirst('nobody')).toEqual([]);
    index.forget('team-a', new Set(['a3']));
    expect(index.newestFirst('team-a')).toEqual(['a4', 'a2']);
    index.forget('team-b', new Set(['b1']));
    expect(index.newestFirst('team-b')).toEqual([]);
  });
});
