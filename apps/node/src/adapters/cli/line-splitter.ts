// Splits a stream of text chunks into lines. Accepts \n, \r\n and lone \r (terminal redraws) as line ends;
// the unterminated rest is kept until more text arrives or `flush()` hands it out.
export class LineSplitter {
  private pending = '';

  /** Returns the complete lines in `chunk` (without their line ends). */
  push(chunk: string): string[] {
    this.pending += chunk;
    const lines: string[] = [];
    let start = 0;
    for (let index = 0; index < this.pending.length; index += 1) {
      const character = this.pending[index];
      if (character === '\n' || character === '\r') {
        // A \r at the very end may be the first half of \r\n: wait for the next chunk to decide.
        if (character === '\r' && index === this.pending.length - 1) break;
        lines.push(this.pending.slice(start, index));
        if (character === '\r' && this.pending[index + 1] === '\n') index += 1;
        start = index + 1;
      }
    }
    this.pending = this.pending.slice(start);
    return lines;
  }

  /** The unterminated rest (a lone trailing \r counts as a line end), or undefined when there is none. */
  flush(): string | undefined {
    const rest = this.pending.endsWith('\r') ? this.pending.slice(0, -1) : this.pending;
    this.pending = '';
    return rest.length > 0 ? rest : undefined;
  }
}
