// Server-sent events as the HTML spec reads them: `field: value` lines, `data` lines joined with "\n", a blank
// line dispatches, `:` lines are comments. An event still pending at EOF is dispatched too (servers that close
// right after the last `data:` line lose nothing).
import { ChunkLineDecoder } from './line-reader.js';

export interface SseEvent {
  /** `message` when the server named none. */
  event: string;
  data: string;
  id?: string;
}

/** Turns SSE lines into events, synchronously; the readers below feed it. */
export class SseParser {
  #event = '';
  /** The event's data lines joined with "\n"; undefined while it has none. */
  #data: string | undefined;
  #id: string | undefined;

  /** Takes one line (without its line end); returns the event a blank line dispatches. */
  line(line: string): SseEvent | undefined {
    if (line === '') {
      if (this.#data !== undefined) return this.#take();
      this.#event = '';
      return undefined;
    }
    // The hot case (every streamed token): `data: <value>`.
    if (line.startsWith('data: ')) {
      this.#addData(line.slice(6));
      return undefined;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.#addData(value);
        break;
      case 'event':
        this.#event = value;
        break;
      case 'id':
        this.#id = value;
        break;
      default:
        // `retry` and unknown fields do not matter to a one-shot request.
        break;
    }
    return undefined;
  }

  /** The events these lines dispatch, in order. */
  lines(lines: readonly string[]): SseEvent[] {
    const events: SseEvent[] = [];
    for (const line of lines) {
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  /** The event still pending at EOF, if any. */
  end(): SseEvent | undefined {
    return this.#data === undefined ? undefined : this.#take();
  }

  #addData(value: string): void {
    this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
  }

  #take(): SseEvent {
    const result: SseEvent =
      this.#id === undefined
        ? { event: this.#event || 'message', data: this.#data ?? '' }
        : { event: this.#event || 'message', data: this.#data ?? '', id: this.#id };
    this.#event = '';
    this.#data = undefined;
    return result;
  }
}

export async function* readSse(chunks: AsyncIterable<Uint8Array>): AsyncIterable<SseEvent> {
  for await (const events of readSseBatches(chunks)) yield* events;
}

/**
 * The same events, one array per upstream read that completed any (never empty), so a consumer handles a read's
 * tokens in one synchronous pass.
 */
export async function* readSseBatches(chunks: AsyncIterable<Uint8Array>): AsyncIterable<SseEvent[]> {
  // Decoding and line splitting inline (not through readLineBatches): one async step per upstream read.
  const lines = new ChunkLineDecoder();
  const parser = new SseParser();
  for await (const chunk of chunks) {
    const events = parser.lines(lines.push(chunk));
    if (events.length > 0) yield events;
  }
  const events = parser.lines(lines.end());
  const last = parser.end();
  if (last) events.push(last);
  if (events.length > 0) yield events;
}
