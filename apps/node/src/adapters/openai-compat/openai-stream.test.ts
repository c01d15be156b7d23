import { describe, expect, it, jest } from '@jest/globals';
import { create, type RunEventPart } from '@iop/wire';

import type { SseEvent } from '../http/sse-reader.js';
import { UpstreamError } from '../http/upstream-error.js';
import { openAIChatParts } from './openai-stream.js';

const toEvent = (item: unknown): SseEvent => ({
  event: 'message',
  data: typeof item === 'string' ? item : JSON.stringify(item),
});

/** Each data item as its own upstream read. */
async function* events(...data: unknown[]): AsyncIterable<SseEvent[]> {
  for (const item of data) {
    await Promise.resolve();
    yield [toEvent(item)];
  }
}

/** Each argument is one upstream read holding those events. */
async function* reads(...batches: unknown[][]): AsyncIterable<SseEvent[]> {
  for (const batch of batches) {
    await Promise.resolve();
    yield batch.map(toEvent);
  }
}

/** Each argument is one upstream read holding those raw data strings. */
async function* readsOf(batches: string[][]): AsyncIterable<SseEvent[]> {
  for (const batch of batches) {
    await Promise.resolve();
    yield batch.map((data) => ({ event: 'message', data }));
  }
}

async function run(source: AsyncIterable<SseEvent[]>): Promise<{ parts: RunEventPart[]; finish: string }> {
  return runWith(source, {});
}

async function runWith(
  source: AsyncIterable<SseEvent[]>,
  options: { fastPath?: boolean },
): Promise<{ parts: RunEventPart[]; finish: string }> {
  const parts: RunEventPart[] = [];
  const generator = openAIChatParts(source, 'r1', options);
  for (;;) {
    const next = await generator.next();
    if (next.done) return { parts, finish: next.value };
    parts.push(next.value);
  }
}

const choice = (delta: object, finish: string | null = null) => ({
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('openAIChatParts', () => {
  it('accepts a stream that ends after a finish_reason without [DONE]', async () => {
    const result = await run(events(choice({ content: 'a' }), choice({}, 'stop')));
    expect(result.finish).toBe('stop');
    expect(result.parts).toEqual([{ type: 'text-delta', text: 'a' }]);
  });

  it('rejects a stream cut before any finish_reason or [DONE]', async () => {
    await expect(run(events(choice({ content: 'a' })))).rejects.toThrow('ended before a finish_reason');
  });

  it('reads the `reasoning` delta field and usage details', async () => {
    const result = await run(
      events(
        choice({ reasoning: 'hmm' }),
        choice({ content: 'ok' }, 'stop'),
        {
          choices: [],
          usage: {
            prompt_tokens: 4,
            completion_tokens: 6,
            total_tokens: 10,
            completion_tokens_details: { reasoning_tokens: 3 },
            prompt_tokens_details: { cached_tokens: 2 },
          },
        },
        '[DONE]',
      ),
    );
    expect(result.parts).toEqual([
      { type: 'reasoning-delta', text: 'hmm' },
      { type: 'text-delta', text: 'ok' },
      {
        type: 'usage',
        usage: create.usage({
          promptTokens: 4,
          completionTokens: 6,
          totalTokens: 10,
          reasoningTokens: 3,
          cachedTokens: 2,
        }),
      },
    ]);
  });

  it('throws the message of an error event', async () => {
    const error = await run(
      events(choice({ content: 'a' }), { error: { message: 'kv cache full', code: 500 } }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).message).toBe('kv cache full');
  });

  it('rejects non-JSON data', async () => {
    await expect(run(events('{oops'))).rejects.toThrow('invalid SSE data');
  });

  it('joins the deltas of one read per kind, keeping the order of kinds and the text', async () => {
    const result = await run(
      reads(
        [choice({ content: 'a' }), choice({ content: 'b' }), choice({ reasoning: 'r1' })],
        [choice({ reasoning: 'r2' }), choice({ content: 'c' }), choice({ content: 'd' }, 'stop')],
        ['[DONE]', choice({ content: 'after done' })],
      ),
    );
    expect(result.finish).toBe('stop');
    expect(result.parts).toEqual([
      { type: 'text-delta', text: 'ab' },
      { type: 'reasoning-delta', text: 'r1' },
      { type: 'reasoning-delta', text: 'r2' },
      { type: 'text-delta', text: 'cd' },
    ]);
  });

  it('yields the text of a read before the error event that ends it', async () => {
    const seen: RunEventPart[] = [];
    const generator = openAIChatParts(
      reads([choice({ content: 'a' }), choice({ content: 'b' }), { error: { message: 'kv cache full' } }]),
      'r1',
    );
    const error = await (async () => {
      for (;;) {
        const next = await generator.next();
        if (next.done) return undefined;
        seen.push(next.value);
      }
    })().catch((caught: unknown) => caught);
    expect(seen).toEqual([{ type: 'text-delta', text: 'ab' }]);
    expect((error as UpstreamError).message).toBe('kv cache full');
  });

  it('gives the same parts with and without the content fast path (seeded mixed streams)', async () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
    const contents = [
      'tok ',
      '',
      'é',
      '"quoted"',
      'back\\slash',
      'line\nbreak',
      '日本',
      '\u0001',
      'content',
      '🙂',
    ];
    const parse = jest.spyOn(JSON, 'parse');
    let fastParses = 0;
    let slowParses = 0;
    const head = (id: string) =>
      `{"id":"${id}","object":"chat.completion.chunk","created":1,"model":"m","choices":[`;
    for (let round = 0; round < 40; round += 1) {
      const reads: string[][] = [];
      let id = 'chatcmpl-a';
      // Some streams think first (reasoning chunks), then answer.
      const thinking = pick(['content', 'reasoning_content', 'reasoning']);
      for (let read = 0; read < 12; read += 1) {
        const batch: string[] = [];
        const field = read < 4 ? thinking : 'content';
        for (let event = 0; event < 1 + Math.floor(random() * 8); event += 1) {
          const roll = random();
          if (random() < 0.02) id = `chatcmpl-${Math.floor(random() * 3)}`;
          const content = JSON.stringify(pick(contents));
          if (roll < 0.85)
            batch.push(`${head(id)}{"index":0,"delta":{"${field}":${content}},"finish_reason":null}]}`);
          else if (roll < 0.87)
            batch.push(
              `${head(id)}{"index":0,"delta":{"content":${content}},"finish_reason":null}],"usage":null}`,
            );
          else if (roll < 0.89)
            batch.push(`${head(id)}{"index":0,"delta":{"role":"assistant","content":${content}}}]}`);
          else if (roll < 0.91)
            batch.push(`${head(id)}{"index":0,"delta":{"reasoning_content":${content}}}]}`);
          else if (roll < 0.93) batch.push(`${head(id)}{"index":1,"delta":{"content":${content}}}]}`);
          else if (roll < 0.95) batch.push(`${head(id)}{"index":0,"delta":{"content" : ${content}}}]}`);
          else if (roll < 0.96)
            batch.push(`${head(id)}{"index":0,"delta":{"content":${content}},"finish_reason":"length"}]}`);
          else if (roll < 0.98)
            batch.push(
              `{"id":"${id}","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":${event}}}`,
            );
          else
            batch.push(
              `${head(id)}{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
            );
        }
        reads.push(batch);
      }
      reads.push(['[DONE]']);
      const before = parse.mock.calls.length;
      const fast = await run(readsOf(reads));
      const middle = parse.mock.calls.length;
      const slow = await runWith(readsOf(reads), { fastPath: false });
      fastParses += middle - before;
      slowParses += parse.mock.calls.length - middle;
      expect(fast).toEqual(slow);
    }
    parse.mockRestore();
    // The fast path was taken (for a good share of the chunks), not just equal by falling back every time.
    expect(fastParses).toBeLessThan(slowParses * 0.8);
  });

  it('flushes tool calls at [DONE] when a server never sends a finish_reason', async () => {
    const result = await run(
      events(
        choice({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] }),
        '[DONE]',
      ),
    );
    expect(result.finish).toBe('tool_calls');
    expect(result.parts).toEqual([
      { type: 'tool-call', call: create.toolCall({ id: 'c', name: 'f', argumentsJson: '{}' }) },
    ]);
  });
});
