import { describe, expect, it } from '@jest/globals';
import { OutputFlow } from './output-flow.js';

describe('OutputFlow', () => {
  it('pauses the output above the high-water mark and resumes at the low-water mark, once each', () => {
    const calls: string[] = [];
    const queue = { length: 0 };
    const flow = new OutputFlow(
      { pause: () => calls.push('pause'), resume: () => calls.push('resume') },
      queue,
      4,
      1,
    );
    queue.length = 4;
    flow.afterPush();
    expect(calls).toEqual([]);
    queue.length = 5;
    flow.afterPush();
    flow.afterPush();
    expect(calls).toEqual(['pause']);
    queue.length = 2;
    flow.afterTake();
    expect(calls).toEqual(['pause']);
    queue.length = 1;
    flow.afterTake();
    flow.afterTake();
    expect(calls).toEqual(['pause', 'resume']);
    expect(flow.isPaused).toBe(false);
  });
});
