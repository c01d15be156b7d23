import { describe, expect, it } from '@jest/globals';
import type { StreamEvent } from './a2a-types.js';
import { JsonRpcError } from './json-rpc.js';
import { TaskSubscription } from './task-subscription.js';

function event(index: number): StreamEvent {
  return {
    kind: 'status-update',
    taskId: 't',
    contextId: 'c',
    status: { state: 'working', timestamp: String(index) },
    final: false,
  };
}

describe('TaskSubscription', () => {
  it('delivers events in order and ends when the signal aborts', async () => {
    const listeners = new Set<(event: StreamEvent) => void>();
    const subscription = new TaskSubscription(listeners);
    const controller = new AbortController();
    for (const listener of listeners) {
      listener(event(1));
      listener(event(2));
    }
    expect(await subscription.next(controller.signal)).toEqual(event(1));
    expect(await subscription.next(controller.signal)).toEqual(event(2));
    const waiting = subscription.next(controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
    subscription.close();
    expect(listeners.size).toBe(0);
  });

  it('refuses a subscription over the per-task cap', () => {
    const listeners = new Set<(event: StreamEvent) => void>();
    new TaskSubscription(listeners, 10, 2);
    new TaskSubscription(listeners, 10, 2);
    expect(() => new TaskSubscription(listeners, 10, 2)).toThrow(JsonRpcError);
    expect(listeners.size).toBe(2);
  });

  it('buffers at most maxQueued events, then fails the subscription once they are taken', async () => {
    const listeners = new Set<(event: StreamEvent) => void>();
    const subscription = new TaskSubscription(listeners, 3);
    const [listener] = [...listeners];
    for (let index = 0; index < 100; index += 1) listener?.(event(index));
    const signal = new AbortController().signal;
    expect(await subscription.next(signal)).toEqual(event(0));
    expect(await subscription.next(signal)).toEqual(event(1));
    expect(await subscription.next(signal)).toEqual(event(2));
    await expect(subscription.next(signal)).rejects.toThrow(/fell more than 3 events behind/);
  });
});
