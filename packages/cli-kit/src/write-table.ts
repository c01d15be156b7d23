// Plain-text tables for CLI output: columns padded to their widest cell, two spaces apart, no trailing blanks.

/** Writes `header` and `rows` as aligned columns, one line each. */
export function writeTable(stream: NodeJS.WritableStream, header: string[], rows: string[][]): void {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  for (const row of [header, ...rows]) {
    const line = row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
    stream.write(`${line}\n`);
  }
}
