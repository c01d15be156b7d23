// Splits a byte stream into text lines as bytes arrive (UTF-8 safe across chunk boundaries), with the adapters'
// one LineSplitter: lines end at "\n", "\r\n" or a lone "\r"; the last unterminated line is yielded at EOF; a line
// longer than `maxLineLength` characters throws LineTooLongError.
import { DEFAULT_MAX_LINE_LENGTH } from '../line-limits.js';
import { LineSplitter } from '../line-splitter.js';

export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  maxLineLength = DEFAULT_MAX_LINE_LENGTH,
): AsyncIterable<string> {
  for await (const lines of readLineBatches(chunks, maxLineLength)) yield* lines;
}

/**
 * The same lines, one array per chunk read (never empty): a consumer that handles a whole chunk's lines
 * synchronously pays the async-iteration cost once per chunk instead of once per line (a streamed token is one
 * SSE line, and one upstream read carries dozens).
 */
export async function* readLineBatches(
  chunks: AsyncIterable<Uint8Array>,
  maxLineLength = DEFAULT_MAX_LINE_LENGTH,
): AsyncIterable<string[]> {
  const decoder = new TextDecoder('utf-8');
  const splitter = new LineSplitter(maxLineLength);
  for await (const chunk of chunks) {
    const lines = splitter.push(decoder.decode(chunk, { stream: true }));
    if (lines.length > 0) yield lines;
  }
  const tail = decoder.decode();
  const lines = tail === '' ? [] : splitter.push(tail);
  const rest = splitter.flush();
  if (rest !== undefined) lines.push(rest);
  if (lines.length > 0) yield lines;
}
