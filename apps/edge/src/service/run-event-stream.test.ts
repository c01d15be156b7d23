import { describe, it, expect } from '@jest/globals';
import { RunEventStream } from './run-event-stream.js';
import type { RunEventWithMeta } from './types.js';

function event(seq: number, terminal = false): RunEventWithMeta {
  return {
    runId: 'r',
    nodeId: 'n',
    seq,
    atUnixMs: seq,
    part: terminal
      ? { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 }
      : { type: 'text-delta', text: String(seq) },
  };
}

async function drain(stream: RunEventStream): Promise<number[]> {
  const seqs: number[] = [];
  for await (const item of stream) seqs.push(item.seq);
  return seqs;
}

describe('RunEventStream', () => {
  it('delivers buffered and live events in order and ends after the terminal one', async () => {
    const stream = new RunEventStream(4, false);
    expect(stream.push(event(1))).toBe('ok');
    const reading = drain(stream);
    await Promise.resolve();
    stream.push(event(2));
    stream.end(event(3, true));
    stream.push(event(4));
    expect(await reading).toEqual([1, 2, 3]);
  });

  it('forEach hands buffered events at once, then each as pushed, and settles after the terminal one', async () => {
    const stream = new RunEventStream(2, false);
    stream.push(event(1));
    stream.push(event(2));
    const seen: number[] = [];
    const { done } = stream.forEach((item) => seen.push(item.seq));
    expect(seen).toEqual([1, 2]);
    // A forEach consumer never falls behind: no overflow past the capacity.
    expect(stream.push(event(3))).toBe('ok');
    expect(stream.push(event(4))).toBe('ok');
    expect(stream.push(event(5))).toBe('ok');
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    stream.end(event(6, true));
    stream.push(event(7));
    await done;
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('forEach on an ended stream delivers everything and is already done; stop() discards later events', async () => {
    const ended = new RunEventStream(4, false);
    ended.push(event(1));
    ended.end(event(2, true));
    const seen: number[] = [];
    await ended.forEach((item) => seen.push(item.seq)).done;
    expect(seen).toEqual([1, 2]);

    const live = new RunEventStream(4, false);
    const later: number[] = [];
    const reading = live.forEach((item) => later.push(item.seq));
    live.push(event(1));
    reading.stop();
    await reading.done;
    live.push(event(2));
    live.end(event(3, true));
    expect(later).toEqual([1]);
    expect(live.buffered).toBe(0);
  });

  it('has a single consumer whichever way it is read', () => {
    const iterated = new RunEventStream(4, false);
    iterated[Symbol.asyncIterator]();
    expect(() => iterated.forEach(() => undefined)).toThrow('single consumer');
    const pushed = new RunEventStream(4, false);
    pushed.forEach(() => undefined);
    expect(() => pushed[Symbol.asyncIterator]()).toThrow('single consumer');
  });

  it('reports overflow for a foreground stream but always keeps the terminal event', async () => {
    const stream = new RunEventStream(2, false);
    expect(stream.push(event(1))).toBe('ok');
    expect(stream.push(event(2))).toBe('ok');
    expect(stream.push(event(3))).toBe('overflow');
    stream.end(event(4, true));
    expect(stream.buffered).toBe(3);
    expect(await drain(stream)).toEqual([1, 2, 4]);
  });

  it('drops the oldest events of a background stream instead of overflowing', async () => {
    const stream = new RunEventStream(2, true);
    for (let seq = 1; seq <= 5; seq += 1) expect(stream.push(event(seq))).toBe('ok');
    stream.end(event(6, true));
    expect(await drain(stream)).toEqual([4, 5, 6]);
  });

  it('discards events after the consumer stops early and refuses a second consumer', async () => {
    const stream = new RunEventStream(4, false);
    stream.push(event(1));
    for await (const item of stream) {
      expect(item.seq).toBe(1);
      break;
    }
    expect(stream.push(event(2))).toBe('ok');
    expect(stream.buffered).toBe(0);
    expect(() => stream[Symbol.asyncIterator]()).toThrow('single consumer');
  });

  it('ends a waiting reader when the terminal event arrives', async () => {
    const stream = new RunEventStream(4, false);
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    stream.end(event(1, true));
    await expect(pending).resolves.toEqual({ value: event(1, true), done: false });
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
  });
});
