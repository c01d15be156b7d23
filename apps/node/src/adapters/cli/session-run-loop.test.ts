import { describe, expect, it } from '@jest/globals';
import type { RunEventPart } from '@iop/wire';
import { runSessionQueue, type SessionRunSteps } from './session-run-loop.js';
import { WaitableQueue } from './waitable-queue.js';

async function collect(parts: AsyncIterable<RunEventPart>): Promise<RunEventPart[]> {
  const seen: RunEventPart[] = [];
  for await (const part of parts) seen.push(part);
  return seen;
}

/** Steps whose items are texts: `end` ends the run, anything else is one text delta. */
function textSteps(waitMs: number, taken: string[]): SessionRunSteps<string> {
  return {
    waitMs: () => waitMs,
    afterTake: () => taken.push('take'),
    elapsedMs: () => 7,
    async *item(text) {
      await Promise.resolve();
      if (text === 'end') {
        yield { type: 'complete', detail: 'exit', finishReason: 'stop', backendMs: 7 };
        return true;
      }
      yield { type: 'text-delta', text };
      return false;
    },
    aborted: () => [{ type: 'cancelled', reason: 'stop' }],
    timeout: () => [
      { type: 'error', code: 'deadline_exceeded', message: 'late', retryable: false, backendMs: 7 },
    ],
  };
}

describe('runSessionQueue', () => {
  it('hands items to the session until one ends the run, with flow control after every take', async () => {
    const queue = new WaitableQueue<string>();
    for (const text of ['a', 'b', 'end', 'never read']) queue.push(text);
    const taken: string[] = [];
    const parts = await collect(runSessionQueue(queue, new AbortController().signal, textSteps(1000, taken)));
    expect(parts.map((part) => part.type)).toEqual(['text-delta', 'text-delta', 'complete']);
    expect(taken).toHaveLength(3);
    expect(queue.length).toBe(1);
  });

  it('ends with the timeout step when the wait passes without an item', async () => {
    const queue = new WaitableQueue<string>();
    queue.push('a');
    const parts = await collect(runSessionQueue(queue, new AbortController().signal, textSteps(0, [])));
    // A wait of 0 still drains what is queued first.
    expect(parts.map((part) => part.type)).toEqual(['text-delta', 'error']);
  });

  it('ends with the aborted step when the run is cancelled', async () => {
    const controller = new AbortController();
    controller.abort('stop');
    const parts = await collect(
      runSessionQueue(new WaitableQueue<string>(), controller.signal, textSteps(1000, [])),
    );
    expect(parts).toEqual([{ type: 'cancelled', reason: 'stop' }]);
  });

  it('ends with an internal error when the queue is closed under the run', async () => {
    const queue = new WaitableQueue<string>();
    queue.close();
    const parts = await collect(runSessionQueue(queue, new AbortController().signal, textSteps(1000, [])));
    expect(parts).toEqual([
      {
        type: 'error',
        code: 'internal',
        message: 'run queue closed unexpectedly',
        retryable: false,
        backendMs: 7,
      },
    ]);
  });
});
