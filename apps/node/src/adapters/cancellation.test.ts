import { describe, expect, it } from '@jest/globals';

import { Cancellation, toAbortSignal } from './cancellation.js';

describe('Cancellation', () => {
  it('runs each listener once, in the order added, with the reason readable from the listener', () => {
    const cancellation = new Cancellation();
    const seen: string[] = [];
    cancellation.addEventListener('abort', () => seen.push(`first ${String(cancellation.reason)}`));
    cancellation.addEventListener('abort', () => seen.push('second'));
    cancellation.addEventListener('abort', () => seen.push('third'));
    expect(cancellation.aborted).toBe(false);
    expect(cancellation.reason).toBeUndefined();

    cancellation.abort('stop');
    cancellation.abort('again');

    expect(cancellation.aborted).toBe(true);
    expect(cancellation.reason).toBe('stop');
    expect(seen).toEqual(['first stop', 'second', 'third']);
  });

  it('forgets removed listeners, registers a listener added twice once, and never runs one added late', () => {
    const cancellation = new Cancellation();
    const seen: string[] = [];
    const a = (): number => seen.push('a');
    const b = (): number => seen.push('b');
    const c = (): number => seen.push('c');
    cancellation.addEventListener('abort', a);
    cancellation.addEventListener('abort', b);
    cancellation.addEventListener('abort', b);
    cancellation.addEventListener('abort', c);
    cancellation.removeEventListener('abort', a);
    cancellation.removeEventListener('abort', c);
    cancellation.abort();
    cancellation.addEventListener('abort', a);
    cancellation.abort();
    expect(seen).toEqual(['b']);
  });

  it('aborts with an AbortError when no reason is given, like AbortController', () => {
    const cancellation = new Cancellation();
    cancellation.abort();
    expect(cancellation.reason).toBeInstanceOf(Error);
    expect((cancellation.reason as Error).name).toBe('AbortError');
  });

  it('still runs the other listeners when one throws, and reports the exception', () => {
    const reported: unknown[] = [];
    const cancellation = new Cancellation((error) => reported.push(error));
    const seen: string[] = [];
    cancellation.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    cancellation.addEventListener('abort', () => seen.push('after'));
    cancellation.abort('x');
    expect(seen).toEqual(['after']);
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toBe('listener failed');
  });
});

describe('toAbortSignal', () => {
  it('returns a real AbortSignal as it is', () => {
    const controller = new AbortController();
    expect(toAbortSignal(controller.signal).signal).toBe(controller.signal);
  });

  it('follows a Cancellation with the same reason, until released', () => {
    const followed = new Cancellation();
    const linked = toAbortSignal(followed);
    expect(linked.signal.aborted).toBe(false);
    followed.abort('gone');
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe('gone');

    const released = new Cancellation();
    const unlinked = toAbortSignal(released);
    unlinked.release();
    released.abort('late');
    expect(unlinked.signal.aborted).toBe(false);
  });

  it('is already aborted when the Cancellation was', () => {
    const cancellation = new Cancellation();
    cancellation.abort('before');
    const { signal } = toAbortSignal(cancellation);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('before');
  });
});
