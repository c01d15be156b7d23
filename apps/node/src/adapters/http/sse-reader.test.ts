import { describe, expect, it } from '@jest/globals';

import { readLines } from './line-reader.js';
import { readNdjson } from './ndjson-reader.js';
import { readSse, readSseBatches } from './sse-reader.js';
import { UpstreamError } from './upstream-error.js';

/** Delivers pieces as separate chunks, each after a macrotask, like a socket would. */
async function* bytes(...pieces: (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  for (const piece of pieces) {
    await new Promise((resolve) => setImmediate(resolve));
    yield typeof piece === 'string' ? new TextEncoder().encode(piece) : piece;
  }
}

async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('readLines', () => {
  it('splits across chunk boundaries, drops CR, keeps a multi-byte character split between chunks', async () => {
    const euro = new TextEncoder().encode('€');
    const lines = await all(readLines(bytes('a\r\nb', 'c\n', euro.slice(0, 1), euro.slice(1), '\nlast')));
    expect(lines).toEqual(['a', 'bc', '€', 'last']);
  });
});

describe('readSse', () => {
  it('reads data, event names, ids, comments and multi-line data', async () => {
    const events = await all(
      readSse(
        bytes(
          ': keep-alive\n',
          'event: response.created\nid: 7\ndata: {"a":',
          '1}\n\n',
          'data: x\ndata: y\n\n',
        ),
      ),
    );
    expect(events).toEqual([
      { event: 'response.created', data: '{"a":1}', id: '7' },
      { event: 'message', data: 'x\ny', id: '7' },
    ]);
  });

  it('handles CRLF framing and a value without a space after the colon', async () => {
    const events = await all(readSse(bytes('data:one\r\n\r\ndata: two\r\n\r\n')));
    expect(events.map((event) => event.data)).toEqual(['one', 'two']);
  });

  it('dispatches an event still pending at EOF and ignores blank-only separators', async () => {
    const events = await all(readSse(bytes('\n\nevent: x\n\ndata: [DONE]')));
    expect(events).toEqual([{ event: 'message', data: '[DONE]' }]);
  });
});

describe('readSseBatches', () => {
  it('hands out the events completed by each read together, and the one pending at EOF last', async () => {
    const batches = await all(
      readSseBatches(bytes('data: 1\n\ndata: 2\n\ndata: 3', '\n\n: ping\n', 'data: 4\n\ndata: 5')),
    );
    expect(batches.map((batch) => batch.map((event) => event.data))).toEqual([
      ['1', '2'],
      ['3'],
      ['4'],
      ['5'],
    ]);
  });
});

describe('readNdjson', () => {
  it('parses one value per line and skips blank lines', async () => {
    expect(await all(readNdjson(bytes('{"a":1}\n\n{"b"', ':2}\n')))).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('rejects an invalid line with a typed upstream_error', async () => {
    const error = await all(readNdjson(bytes('{"a":1}\nnot json\n'))).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).code).toBe('upstream_error');
    expect((error as UpstreamError).message).toContain('not json');
  });
});
