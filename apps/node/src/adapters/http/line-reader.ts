// Splits a byte stream into text lines as bytes arrive (UTF-8 safe across chunk boundaries), with the adapters'
// one LineSplitter: lines end at "\n", "\r\n" or a lone "\r"; the last unterminated line is yielded at EOF; a line
// longer than `maxLineLength` characters throws LineTooLongError.
import { DEFAULT_MAX_LINE_LENGTH } from '../line-limits.js';
import { LineSplitter } from '../line-splitter.js';

export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  maxLineLength = DEFAULT_MAX_LINE_LENGTH,
): AsyncIterable<string> {
  const decoder = new TextDecoder('utf-8');
  const splitter = new LineSplitter(maxLineLength);
  for await (const chunk of chunks) yield* splitter.push(decoder.decode(chunk, { stream: true }));
  const tail = decoder.decode();
  if (tail !== '') yield* splitter.push(tail);
  const rest = splitter.flush();
  if (rest !== undefined) yield rest;
}
