import { describe, expect, it } from '@jest/globals';

import { ollamaChatParts } from './ollama-stream.js';

async function* lines(...values: unknown[]): AsyncIterable<unknown> {
  for (const value of values) {
    await Promise.resolve();
    yield value;
  }
}

async function drain(source: AsyncIterable<unknown>): Promise<string> {
  const generator = ollamaChatParts(source, 'r1');
  for (;;) {
    const next = await generator.next();
    if (next.done) return next.value;
  }
}

describe('ollamaChatParts', () => {
  it('fails a stream that ends without the done line', async () => {
    await expect(drain(lines({ message: { content: 'a' }, done: false }))).rejects.toThrow(
      'before the final "done" line',
    );
  });

  it('passes through done reasons other than stop and length', async () => {
    expect(await drain(lines({ message: { content: '' }, done: true, done_reason: 'unload' }))).toBe(
      'unload',
    );
  });

  it('accepts string tool-call arguments from servers that send JSON text', async () => {
    const generator = ollamaChatParts(
      lines(
        { message: { tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] }, done: false },
        { done: true },
      ),
      'r9',
    );
    const first = await generator.next();
    expect(first.value).toMatchObject({
      type: 'tool-call',
      call: { id: 'call_r9_0', name: 'f', argumentsJson: '{"a":1}' },
    });
  });
});
