// The run loop every CLI session kind shares: take the next event from the run's queue (bounded by the session's
// own wait — deadline, idle timeout, result grace — and the run's signal) and hand it to the session's step for
// that outcome. An item may end the run or not; an abort, a timeout and a closed queue always end it. The session
// kinds differ only in their steps (what a line, an exit or a server event means; how cancel and the deadline
// are carried out).
import type { RunEventPart } from '@iop/wire';
import { errorPart } from './session-context.js';
import type { WaitableQueue } from './waitable-queue.js';

/** One session kind's answers to what its run's queue gives. */
export interface SessionRunSteps<T> {
  /** How long the next take may wait (ms); ≤ 0 answers `timeout` at once. */
  waitMs(): number;
  /** Called after every take (output flow control resumes a paused process here). */
  afterTake?(): void;
  /** The parts of one queued event; returns true when the event ended the run. */
  item(item: T): AsyncGenerator<RunEventPart, boolean, undefined>;
  /** The run's signal aborted: the run's last parts. */
  aborted(): AsyncIterable<RunEventPart> | Iterable<RunEventPart>;
  /** `waitMs` passed without an event: the run's last parts. */
  timeout(): AsyncIterable<RunEventPart> | Iterable<RunEventPart>;
  /** Milliseconds since the run started (the `backendMs` of a part the loop itself ends the run with). */
  elapsedMs(): number;
}

export async function* runSessionQueue<T>(
  queue: WaitableQueue<T>,
  signal: AbortSignal,
  steps: SessionRunSteps<T>,
): AsyncGenerator<RunEventPart, void, undefined> {
  for (;;) {
    const taken = await queue.take(Math.max(0, steps.waitMs()), signal);
    steps.afterTake?.();
    switch (taken.kind) {
      case 'item':
        if (yield* steps.item(taken.item)) return;
        break;
      case 'aborted':
        yield* steps.aborted();
        return;
      case 'timeout':
        yield* steps.timeout();
        return;
      case 'closed':
        yield errorPart('internal', 'run queue closed unexpectedly', false, steps.elapsedMs());
        return;
      default: {
        const unreachable: never = taken;
        throw new Error(`unexpected queue result ${JSON.stringify(unreachable)}`);
      }
    }
  }
}
