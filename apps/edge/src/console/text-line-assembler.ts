// Turns a run's text deltas into whole lines: a delta may hold part of a line or several lines, and the console
// prints one `[<label>-msg]` line per text line. Whatever is left without a newline is flushed at the run's end.

export class TextLineAssembler {
  private pending = '';

  /** Adds a delta; returns the lines it completed (without their line endings). */
  push(text: string): string[] {
    this.pending += text;
    const lines: string[] = [];
    let newline = this.pending.indexOf('\n');
    while (newline >= 0) {
      lines.push(stripCarriageReturn(this.pending.slice(0, newline)));
      this.pending = this.pending.slice(newline + 1);
      newline = this.pending.indexOf('\n');
    }
    return lines;
  }

  /** The unterminated remainder as a final line, if there is one. */
  flush(): string[] {
    const rest = stripCarriageReturn(this.pending);
    this.pending = '';
    return rest.length > 0 ? [rest] : [];
  }
}

function stripCarriageReturn(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
