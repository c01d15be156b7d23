// The one writer of a whole JSON answer on the HTTP surfaces.
import type { ServerResponse } from 'node:http';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Writes status, the headers set so far plus `headers` (a flat name/value list, extended in place), the content
 * type and length, and the body.
 */
export function writeJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: (string | number)[] = [],
): void {
  const text = JSON.stringify(body);
  headers.push('content-type', JSON_CONTENT_TYPE, 'content-length', Buffer.byteLength(text));
  response.writeHead(status, headers as string[]);
  // end(body), not write() + end(): write() corks the socket and schedules an uncork on a tick of its own.
  response.end(text);
}
