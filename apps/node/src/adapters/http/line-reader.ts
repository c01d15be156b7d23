// Splits a byte stream into text lines as bytes arrive (UTF-8 safe across chunk boundaries). Lines end at
// "\n"; a trailing "\r" is dropped so CRLF streams read the same. The last unterminated line is yielded at EOF.
export async function* readLines(chunks: AsyncIterable<Uint8Array>): AsyncIterable<string> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  for await (const chunk of chunks) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      yield line.endsWith('\r') ? line.slice(0, -1) : line;
      newline = buffer.indexOf('\n');
    }
  }
  buffer += decoder.decode();
  if (buffer !== '') yield buffer.endsWith('\r') ? buffer.slice(0, -1) : buffer;
}
