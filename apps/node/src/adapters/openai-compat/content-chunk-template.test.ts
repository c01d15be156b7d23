import { describe, expect, it } from '@jest/globals';

import { ContentChunkTemplate } from './content-chunk-template.js';

/** A vLLM token chunk as the server writes it. */
const chunk = (content: string, id = 'chatcmpl-1'): string =>
  `{"id":"${id}","object":"chat.completion.chunk","created":1764572400,"model":"m",` +
  `"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null}]}`;

describe('ContentChunkTemplate', () => {
  it('learns from one parsed chunk and reads the content of the next ones from their text', () => {
    const template = new ContentChunkTemplate();
    expect(template.match(chunk('a'))).toBeUndefined();
    template.learn(chunk('a'), 'content', 'a');
    expect(template.learned).toBe(true);
    expect(template.match(chunk('tok '))).toBe('tok ');
    expect(template.match(chunk(''))).toBe('');
    expect(template.match(chunk('é 日本 🙂'))).toBe('é 日本 🙂');
  });

  it('leaves every literal with a quote, backslash or control character to the full parse', () => {
    const template = new ContentChunkTemplate();
    template.learn(chunk('a'), 'content', 'a');
    for (const content of ['say "hi"', 'back\\slash', 'line\nbreak', 'tab\there', '\u0001'])
      expect(template.match(chunk(content))).toBeUndefined();
    // Raw text that is not one valid literal at all.
    const broken = chunk('a').replace('"content":"a"', '"content":"a","x":"b"');
    expect(template.match(broken)).toBeUndefined();
    // A chunk that differs elsewhere (the finish chunk) is not taken either.
    expect(
      template.match(chunk('a').replace('"finish_reason":null', '"finish_reason":"stop"')),
    ).toBeUndefined();
  });

  it('reads reasoning chunks as reasoning, and follows a stream from reasoning to content', () => {
    const reasoning = (text: string): string =>
      `{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":${JSON.stringify(text)}},"finish_reason":null}]}`;
    const template = new ContentChunkTemplate();
    template.learn(reasoning('hmm'), 'reasoning_content', 'hmm');
    expect(template.match(reasoning('so'))).toBe('so');
    expect(template.type).toBe('reasoning-delta');
    const content = `{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`;
    expect(template.match(content)).toBeUndefined();
    template.learn(content, 'content', 'a');
    expect(template.match(content.replace('"a"', '"b"'))).toBe('b');
    expect(template.type).toBe('text-delta');
  });

  it('does not learn when the content cannot be placed for certain', () => {
    const ambiguous = new ContentChunkTemplate();
    const twice = `{"content":"a","choices":[{"index":0,"delta":{"content":"a"}}]}`;
    ambiguous.learn(twice, 'content', 'a');
    expect(ambiguous.learned).toBe(false);
    // The only `"content":"a"` in the text is not delta.content (the server escaped that one): the probe parse
    // finds it out.
    const elsewhere = new ContentChunkTemplate();
    elsewhere.learn(`{"content":"a","choices":[{"index":0,"delta":{"content":"\\u0061"}}]}`, 'content', 'a');
    expect(elsewhere.learned).toBe(false);
    const spaced = new ContentChunkTemplate();
    spaced.learn(`{"choices":[{"index":0,"delta":{"content": "a"}}]}`, 'content', 'a');
    expect(spaced.learned).toBe(false);
  });

  it('follows a changed chunk shape, but stops learning for chunks that differ every time', () => {
    const template = new ContentChunkTemplate();
    template.learn(chunk('a', 'one'), 'content', 'a');
    expect(template.match(chunk('b', 'one'))).toBe('b');
    // Same stream, new id from here on: the miss allows one new template.
    expect(template.match(chunk('c', 'two'))).toBeUndefined();
    template.learn(chunk('c', 'two'), 'content', 'c');
    expect(template.match(chunk('d', 'two'))).toBe('d');

    const changing = new ContentChunkTemplate();
    for (let index = 0; index < 10; index += 1) {
      expect(changing.match(chunk('x', `id-${index}`))).toBeUndefined();
      changing.learn(chunk('x', `id-${index}`), 'content', 'x');
    }
    // Three learned templates never matched: the last stays, nothing new is learned.
    changing.learn(chunk('y', 'id-10'), 'content', 'y');
    expect(changing.match(chunk('z', 'id-10'))).toBeUndefined();
    expect(changing.match(chunk('z', 'id-2'))).toBe('z');
  });
});
