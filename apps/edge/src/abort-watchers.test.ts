import { getEventListeners } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { abortWatcherCount, unwatchAbort, watchAbort } from './abort-watchers.js';

describe('abort watchers', () => {
  it('calls each watcher once on abort, through one listener on the signal', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    watchAbort(controller.signal, a);
    watchAbort(controller.signal, b);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    expect(abortWatcherCount(controller.signal)).toBe(2);
    controller.abort();
    controller.signal.dispatchEvent(new Event('abort'));
    expect(calls).toEqual(['a', 'b']);
    expect(abortWatcherCount(controller.signal)).toBe(0);
  });

  it('does not call a watcher that unwatched, and many watch/unwatch cycles keep one listener', () => {
    const controller = new AbortController();
    let called = 0;
    for (let index = 0; index < 100; index += 1) {
      const watcher = () => (called += 1);
      watchAbort(controller.signal, watcher);
      unwatchAbort(controller.signal, watcher);
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    expect(abortWatcherCount(controller.signal)).toBe(0);
    controller.abort();
    expect(called).toBe(0);
  });

  it('unwatching a signal nobody watched is a no-op', () => {
    const signal = new AbortController().signal;
    unwatchAbort(signal, () => undefined);
    expect(abortWatcherCount(signal)).toBe(0);
  });
});
