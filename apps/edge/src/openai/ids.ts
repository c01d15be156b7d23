// Identifiers for responses, messages and tool calls: URL- and JSON-safe so they can be spliced into SSE lines
// without escaping.
import { randomBytes } from 'node:crypto';

export function randomId(bytes = 12): string {
  return randomBytes(bytes).toString('base64url').replace(/[-_]/g, 'x');
}
