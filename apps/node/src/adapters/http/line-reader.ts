// Splits a byte stream into text lines as bytes arrive (UTF-8 safe across chunk boundaries). Lines end at
// "\n"; a trailing "\r" is dropped so CRLF streams read the same. The last unterminated line is yielded at EOF.
// Each decoded chunk is scanned once (the unterminated rest is never rescanned), and that rest may grow to
// `maxLineLength` characters: a longer line throws LineTooLongError.
import { DEFAULT_MAX_LINE_LENGTH, LineTooLongError } from '../line-limits.js';

export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  maxLineLength = DEFAULT_MAX_LINE_LENGTH,
): AsyncIterable<string> {
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  for await (const chunk of chunks) {
    const text = decoder.decode(chunk, { stream: true });
    let start = 0;
    let newline = text.indexOf('\n');
    while (newline !== -1) {
      const line = pending + text.slice(start, newline);
      pending = '';
      yield line.endsWith('\r') ? line.slice(0, -1) : line;
      start = newline + 1;
      newline = text.indexOf('\n', start);
    }
    pending += start === 0 ? text : text.slice(start);
    if (pending.length > maxLineLength) throw new LineTooLongError(maxLineLength);
  }
  pending += decoder.decode();
  if (pending !== '') yield pending.endsWith('\r') ? pending.slice(0, -1) : pending;
}
