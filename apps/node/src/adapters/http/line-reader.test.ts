import { describe, expect, it } from '@jest/globals';
import { LineTooLongError } from '../line-limits.js';
import { readLines } from './line-reader.js';

async function* chunks(count: number, piece: Uint8Array, tail: Uint8Array): AsyncIterable<Uint8Array> {
  await Promise.resolve();
  for (let index = 0; index < count; index += 1) yield piece;
  yield tail;
}

async function all(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of iterable) out.push(line);
  return out;
}

describe('readLines bounds', () => {
  it('reads a 4 MiB line that arrives in 1 KiB chunks in linear time', async () => {
    const started = performance.now();
    const lines = await all(
      readLines(chunks(4096, new Uint8Array(1024).fill(0x78), new TextEncoder().encode('\nnext\n'))),
    );
    expect(lines.map((line) => line.length)).toEqual([4 * 1024 * 1024, 4]);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('throws LineTooLongError when an unterminated line outgrows the limit', async () => {
    await expect(
      all(readLines(chunks(100, new Uint8Array(100).fill(0x78), new Uint8Array()), 1000)),
    ).rejects.toBeInstanceOf(LineTooLongError);
  });

  it('still yields many short lines of one chunk in order', async () => {
    const text = Array.from({ length: 1000 }, (_, index) => `l${index}`).join('\n');
    const lines = await all(readLines(chunks(0, new Uint8Array(), new TextEncoder().encode(text))));
    expect(lines).toHaveLength(1000);
    expect(lines[999]).toBe('l999');
  });
});
