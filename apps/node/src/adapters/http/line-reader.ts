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
  const decoder = new ChunkLineDecoder(maxLineLength);
  for await (const chunk of chunks) {
    const lines = decoder.push(chunk);
    if (lines.length > 0) yield lines;
  }
  const lines = decoder.end();
  if (lines.length > 0) yield lines;
}

/** Bytes to lines, synchronously: UTF-8 decoding across chunk boundaries, then the LineSplitter. */
export class ChunkLineDecoder {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #splitter: LineSplitter;

  constructor(maxLineLength = DEFAULT_MAX_LINE_LENGTH) {
    this.#splitter = new LineSplitter(maxLineLength);
  }

  /** The lines completed by this chunk. Throws LineTooLongError. */
  push(chunk: Uint8Array): string[] {
    return this.#splitter.push(this.#decoder.decode(chunk, { stream: true }));
  }

  /** The lines left at EOF (the last one unterminated). */
  end(): string[] {
    const tail = this.#decoder.decode();
    const lines = tail === '' ? [] : this.#splitter.push(tail);
    const rest = this.#splitter.flush();
    if (rest !== undefined) lines.push(rest);
    return lines;
  }
}
