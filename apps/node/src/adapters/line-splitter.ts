// Splits a stream of text chunks into lines. Accepts \n, \r\n and lone \r (terminal redraws) as line ends; the
// unterminated rest is kept until more text arrives or `flush()` hands it out. Each chunk is scanned once (the
// kept rest is never rescanned), and the rest may grow to `maxLineLength` characters at most: a longer line throws
// LineTooLongError (a CLI printing one endless line must fail its run, not fill the node's memory).
import { DEFAULT_MAX_LINE_LENGTH, LineTooLongError } from './line-limits.js';

export { DEFAULT_MAX_LINE_LENGTH, LineTooLongError };

export class LineSplitter {
  private parts: string[] = [];
  private pendingLength = 0;
  /** The previous chunk ended with \r: a \n at the start of the next one belongs to that line end. */
  private afterCarriageReturn = false;

  constructor(private readonly maxLineLength = DEFAULT_MAX_LINE_LENGTH) {}

  /** Returns the complete lines in `chunk` (without their line ends). Throws LineTooLongError. */
  push(chunk: string): string[] {
    const lines: string[] = [];
    let start = 0;
    if (this.afterCarriageReturn) {
      this.afterCarriageReturn = false;
      if (chunk.charCodeAt(0) === 10) start = 1;
    }
    if (chunk.indexOf('\r', start) === -1) {
      // No CR in this chunk (SSE and NDJSON from HTTP servers): let the engine's indexOf find the line ends.
      for (let end = chunk.indexOf('\n', start); end !== -1; end = chunk.indexOf('\n', start)) {
        lines.push(this.takeLine(chunk.slice(start, end)));
        start = end + 1;
      }
    } else {
      for (let index = start; index < chunk.length; index += 1) {
        const code = chunk.charCodeAt(index);
        if (code !== 10 && code !== 13) continue;
        lines.push(this.takeLine(chunk.slice(start, index)));
        if (code === 13) {
          if (index === chunk.length - 1) this.afterCarriageReturn = true;
          else if (chunk.charCodeAt(index + 1) === 10) index += 1;
        }
        start = index + 1;
      }
    }
    if (start < chunk.length) {
      const rest = chunk.slice(start);
      this.pendingLength += rest.length;
      if (this.pendingLength > this.maxLineLength) {
        this.parts = [];
        this.pendingLength = 0;
        throw new LineTooLongError(this.maxLineLength);
      }
      this.parts.push(rest);
    }
    return lines;
  }

  /** The unterminated rest, or undefined when there is none. */
  flush(): string | undefined {
    this.afterCarriageReturn = false;
    if (this.pendingLength === 0) return undefined;
    return this.takeLine('');
  }

  private takeLine(tail: string): string {
    if (this.parts.length === 0) return tail;
    this.parts.push(tail);
    const line = this.parts.join('');
    this.parts = [];
    this.pendingLength = 0;
    return line;
  }
}
