// Server-sent events as the HTML spec reads them: `field: value` lines, `data` lines joined with "\n", a blank
// line dispatches, `:` lines are comments. An event still pending at EOF is dispatched too (servers that close
// right after the last `data:` line lose nothing).
import { readLines } from './line-reader.js';

export interface SseEvent {
  /** `message` when the server named none. */
  event: string;
  data: string;
  id?: string;
}

export async function* readSse(chunks: AsyncIterable<Uint8Array>): AsyncIterable<SseEvent> {
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  const take = (): SseEvent => {
    const result: SseEvent = {
      event: event || 'message',
      data: data.join('\n'),
      ...(id === undefined ? {} : { id }),
    };
    event = '';
    data = [];
    return result;
  };
  for await (const line of readLines(chunks)) {
    if (line === '') {
      if (data.length > 0) yield take();
      else event = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        data.push(value);
        break;
      case 'event':
        event = value;
        break;
      case 'id':
        id = value;
        break;
      default:
        // `retry` and unknown fields do not matter to a one-shot request.
        break;
    }
  }
  if (data.length > 0) yield take();
}
