import { describe, it, expect } from '@jest/globals';
import { createEventBus } from './event-bus.js';
import type { EdgeEvent } from './types.js';

function nodeEvent(index: number): EdgeEvent {
  return {
    type: 'node',
    event: {
      kind: 'connected',
      nodeId: `n${index}`,
      alias: `n${index}`,
      reason: 'registered',
      atUnixMs: index,
    },
  };
}

function ids(events: EdgeEvent[]): string[] {
  return events.map((event) => (event.type === 'node' ? event.event.nodeId : event.event.runId));
}

async function take(iterable: AsyncIterable<EdgeEvent>, count: number): Promise<EdgeEvent[]> {
  const result: EdgeEvent[] = [];
  if (count === 0) return result;
  for await (const event of iterable) {
    result.push(event);
    if (result.length === count) break;
  }
  return result;
}

describe('createEventBus', () => {
  it('delivers published events to every live subscriber in order', async () => {
    const bus = createEventBus({ replaySize: 4, queueSize: 8 });
    const first = bus.subscribe();
    const second = bus.subscribe();
    for (let index = 0; index < 3; index += 1) bus.publish(nodeEvent(index));
    expect(ids(await take(first, 3))).toEqual(['n0', 'n1', 'n2']);
    expect(ids(await take(second, 3))).toEqual(['n0', 'n1', 'n2']);
    expect(bus.subscriberCount).toBe(0);
  });

  it('wakes a waiting reader when an event arrives later', async () => {
    const bus = createEventBus({ replaySize: 0, queueSize: 2 });
    const subscription = bus.subscribe();
    const pending = take(subscription, 1);
    bus.publish(nodeEvent(7));
    expect(ids(await pending)).toEqual(['n7']);
  });

  it('replays the most recent events to late subscribers that ask for it', async () => {
    const bus = createEventBus({ replaySize: 3, queueSize: 10 });
    for (let index = 0; index < 5; index += 1) bus.publish(nodeEvent(index));
    const late = bus.subscribe({ replay: true });
    bus.publish(nodeEvent(5));
    expect(ids(await take(late, 4))).toEqual(['n2', 'n3', 'n4', 'n5']);
    const noReplay = bus.subscribe();
    bus.publish(nodeEvent(6));
    expect(ids(await take(noReplay, 1))).toEqual(['n6']);
  });

  it('keeps nothing for replay after endReplay: a later replay subscription gets live events only', async () => {
    const bus = createEventBus({ replaySize: 8, queueSize: 10 });
    for (let index = 0; index < 3; index += 1) bus.publish(nodeEvent(index));
    const early = bus.subscribe({ replay: true });
    bus.endReplay();
    bus.publish(nodeEvent(3));
    bus.publish(nodeEvent(4));
    const late = bus.subscribe({ replay: true });
    bus.publish(nodeEvent(5));
    // The subscriber that came before the end still got its replay and every live event.
    expect(ids(await take(early, 6))).toEqual(['n0', 'n1', 'n2', 'n3', 'n4', 'n5']);
    // Neither the events kept before the end nor those published after it are replayed.
    expect(ids(await take(late, 1))).toEqual(['n5']);
  });

  it('gives a filtered subscriber only the events it accepts, replay included, and never counts the rest as dropped', async () => {
    const bus = createEventBus({ replaySize: 4, queueSize: 2 });
    bus.publish(nodeEvent(1));
    bus.publish(nodeEvent(2));
    const even = (event: EdgeEvent) => event.type === 'node' && Number(event.event.nodeId.slice(1)) % 2 === 0;
    const filtered = bus.subscribe({ replay: true, filter: even });
    const all = bus.subscribe();
    for (let index = 3; index < 9; index += 1) bus.publish(nodeEvent(index));
    // Queue size 2: the filtered subscriber queued n2 (replay), n4, n6, n8 and lost the two oldest of those only.
    expect(ids(await take(filtered, 2))).toEqual(['n6', 'n8']);
    expect(filtered.dropped).toBe(2);
    expect(ids(await take(all, 2))).toEqual(['n7', 'n8']);
  });

  it('drops the oldest events of a slow subscriber and counts them, without affecting a fast one', async () => {
    const bus = createEventBus({ replaySize: 0, queueSize: 3 });
    const slow = bus.subscribe();
    const fast = bus.subscribe();
    const fastSeen: string[] = [];
    const fastReader = (async () => {
      for await (const event of fast) {
        fastSeen.push(ids([event])[0] ?? '');
        if (fastSeen.length === 10) break;
      }
    })();
    for (let index = 0; index < 10; index += 1) {
      bus.publish(nodeEvent(index));
      // Let the fast reader run between publishes, as it would between socket reads.
      await Promise.resolve();
      await Promise.resolve();
    }
    await fastReader;
    expect(fastSeen).toHaveLength(10);
    expect(slow.dropped).toBe(7);
    expect(ids(await take(slow, 3))).toEqual(['n7', 'n8', 'n9']);
    expect(fast.dropped).toBe(0);
  });

  it('publish never waits for a subscriber that never reads', () => {
    const bus = createEventBus({ replaySize: 16, queueSize: 16 });
    const stuck = bus.subscribe();
    const started = performance.now();
    for (let index = 0; index < 100_000; index += 1) bus.publish(nodeEvent(index));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(stuck.dropped).toBe(100_000 - 16);
    stuck.close();
  });

  it('ends a subscription on close, on abort and on for-await break', async () => {
    const bus = createEventBus({ replaySize: 0, queueSize: 4 });
    const closed = bus.subscribe();
    const pending = take(closed, 1);
    closed.close();
    expect(await pending).toEqual([]);

    const controller = new AbortController();
    const aborted = bus.subscribe({ signal: controller.signal });
    const abortedPending = take(aborted, 1);
    controller.abort();
    expect(await abortedPending).toEqual([]);

    const alreadyAborted = bus.subscribe({ signal: AbortSignal.abort() });
    expect(await take(alreadyAborted, 1)).toEqual([]);

    const broken = bus.subscribe();
    bus.publish(nodeEvent(1));
    await take(broken, 1);
    expect(bus.subscriberCount).toBe(0);
  });

  it('close() ends every subscription and ignores later publishes', async () => {
    const bus = createEventBus({ replaySize: 2, queueSize: 2 });
    const subscription = bus.subscribe();
    const pending = take(subscription, 1);
    bus.close();
    expect(await pending).toEqual([]);
    bus.publish(nodeEvent(1));
    expect(await take(bus.subscribe({ replay: true }), 1)).toEqual([]);
  });

  it('rejects a second concurrent reader of one subscription', async () => {
    const bus = createEventBus({ replaySize: 0, queueSize: 2 });
    const subscription = bus.subscribe();
    const iterator = subscription[Symbol.asyncIterator]();
    const first = iterator.next();
    await expect(iterator.next()).rejects.toThrow('single consumer');
    subscription.close();
    await expect(first).resolves.toEqual({ value: undefined, done: true });
  });

  it('validates its sizes', () => {
    expect(() => createEventBus({ replaySize: -1, queueSize: 1 })).toThrow(RangeError);
    expect(() => createEventBus({ replaySize: 0, queueSize: 0 })).toThrow(RangeError);
  });
});
