// Identifiers for responses, messages and tool calls: URL- and JSON-safe so they can be spliced into SSE lines
// without escaping.
import { randomBase64Url } from '../random-ids.js';

export function randomId(bytes = 12): string {
  return randomBase64Url(bytes).replace(/[-_]/g, 'x');
}
