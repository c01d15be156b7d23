// Reads a text/event-stream response body into parsed events (only `data:` payloads matter to us; multi-line
// data is joined with \n as the SSE spec says). Ends when the body ends or the signal aborts the fetch.
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r?\n/);
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(buffer[newline] === '\r' ? newline + 2 : newline + 1);
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        newline = buffer.search(/\r?\n/);
      }
    }
    if (data.length > 0) yield data.join('\n');
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}
