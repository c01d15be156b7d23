// Newline-delimited JSON (Ollama's streaming format): one JSON value per non-empty line.
import { readLines } from './line-reader.js';
import { UpstreamError } from './upstream-error.js';

export async function* readNdjson(chunks: AsyncIterable<Uint8Array>): AsyncIterable<unknown> {
  for await (const line of readLines(chunks)) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line) as unknown;
    } catch (error) {
      throw new UpstreamError('upstream_error', `invalid NDJSON line from upstream: ${line.slice(0, 200)}`, {
        retryable: false,
        cause: error,
      });
    }
    yield value;
  }
}
