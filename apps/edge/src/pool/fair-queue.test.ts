import { describe, expect, it } from '@jest/globals';
import { FairQueue, type FlowSpec, type QueueClass } from './fair-queue.js';

interface Item {
  name: string;
}

const flow = (principal: string, weight = 1, priority: QueueClass = 'interactive'): FlowSpec => ({
  principal,
  weight,
  priority,
});

/** Serves every waiter in turn (what the pool does when each one gets a slot) and returns their names. */
function serveAll(queue: FairQueue<Item>): string[] {
  const served: string[] = [];
  for (;;) {
    const next = queue.order().next();
    if (next.done) return served;
    queue.take(next.value);
    served.push(next.value.name);
  }
}

function fill(
  queue: FairQueue<Item>,
  seq: { n: number },
  principal: string,
  count: number,
  spec = flow(principal),
) {
  const items: Item[] = [];
  for (let index = 0; index < count; index += 1) {
    const item = { name: `${principal}${index}` };
    queue.push(item, ++seq.n, spec);
    items.push(item);
  }
  return items;
}

describe('FairQueue', () => {
  it('serves principals round robin, FIFO within each', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'noisy', 4);
    fill(queue, seq, 'quiet', 2);
    expect(serveAll(queue)).toEqual(['noisy0', 'quiet0', 'noisy1', 'quiet1', 'noisy2', 'noisy3']);
    expect(queue.length).toBe(0);
    expect(queue.activeFlows()).toBe(0);
  });

  it('weights the rounds: a weight-2 key is served twice per turn of a weight-1 key', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'a', 6, flow('a', 2));
    fill(queue, seq, 'b', 6, flow('b', 1));
    const served = serveAll(queue).slice(0, 9);
    expect(served.filter((name) => name.startsWith('a'))).toHaveLength(6);
    expect(served.filter((name) => name.startsWith('b'))).toHaveLength(3);
  });

  it('puts a newcomer one round behind the flood, not behind its whole backlog', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'noisy', 30);
    // Ten noisy waiters are served before quiet arrives: noisy's pass is far ahead of 0, quiet starts "now".
    for (let index = 0; index < 10; index += 1) {
      const next = queue.order().next();
      if (next.done) throw new Error('empty');
      queue.take(next.value);
    }
    fill(queue, seq, 'quiet', 3);
    const order = serveAll(queue);
    expect(order.slice(0, 6)).toEqual(['quiet0', 'noisy10', 'quiet1', 'noisy11', 'quiet2', 'noisy12']);
  });

  it('gives no credit for idle time: a key that comes back competes from the current round', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    const [early] = fill(queue, seq, 'early', 1);
    queue.take(early);
    // `busy` is served 5 times alone; `early` coming back gets one turn, not six in a row.
    fill(queue, seq, 'busy', 10);
    for (let index = 0; index < 5; index += 1) queue.take(queue.order().next().value as Item);
    fill(queue, seq, 'early', 3);
    expect(serveAll(queue).slice(0, 4)).toEqual(['early0', 'busy5', 'early1', 'busy6']);
  });

  it('serves batch waiters only when no interactive one is left', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'bulk', 3, flow('bulk', 1, 'batch'));
    fill(queue, seq, 'chat', 2);
    expect(queue.head()?.name).toBe('chat0');
    expect(serveAll(queue)).toEqual(['chat0', 'chat1', 'bulk0', 'bulk1', 'bulk2']);
    expect(queue.head()).toBeUndefined();
  });

  it('moves a whole flow when its key changes priority while waiting', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'k', 2, flow('k', 1, 'batch'));
    fill(queue, seq, 'other', 1, flow('other', 1, 'batch'));
    queue.push({ name: 'k2' }, ++seq.n, flow('k', 1, 'interactive'));
    expect(serveAll(queue)).toEqual(['k0', 'k1', 'k2', 'other0']);
  });

  it('lists the order lazily without changing anything, and skips what left meanwhile', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    const [a0, a1] = fill(queue, seq, 'a', 2);
    fill(queue, seq, 'b', 1);
    expect([...queue.order()].map((item) => item.name)).toEqual(['a0', 'b0', 'a1']);
    expect([...queue.order()].map((item) => item.name)).toEqual(['a0', 'b0', 'a1']);
    expect(queue.head()).toBe(a0);
    const iterator = queue.order();
    expect(iterator.next().value).toBe(a0);
    expect(queue.remove(a1)).toBe(true);
    const next = iterator.next();
    expect(next.done ? undefined : next.value.name).toBe('b0');
    expect(iterator.next().done).toBe(true);
  });

  it('does not charge a principal for a waiter that left (abort, timeout)', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    const [a0] = fill(queue, seq, 'a', 3);
    fill(queue, seq, 'b', 3);
    expect(queue.remove(a0)).toBe(true);
    expect(queue.remove(a0)).toBe(false);
    expect(serveAll(queue)).toEqual(['a1', 'b0', 'a2', 'b1', 'b2']);
  });

  it('lists every waiter oldest first and refuses an item twice', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    const items = [...fill(queue, seq, 'a', 2), ...fill(queue, seq, 'b', 2)];
    expect(queue.items()).toEqual(items);
    expect(() => queue.push(items[0], 99, flow('a'))).toThrow('already queued');
    expect(() => queue.take({ name: 'stranger' })).toThrow('not queued');
  });

  it('treats a weight outside 1..1000 as 1 instead of starving or flooding', () => {
    const queue = new FairQueue<Item>();
    const seq = { n: 0 };
    fill(queue, seq, 'a', 3, flow('a', 0));
    fill(queue, seq, 'b', 3, flow('b', Number.NaN));
    expect(serveAll(queue)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
  });
});
