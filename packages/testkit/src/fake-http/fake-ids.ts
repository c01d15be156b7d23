// Deterministic identifiers for fake servers: digests derived from model names (stable across runs, so tests
// can assert them) and short random-looking ids for completions and tool calls.
import { createHash, randomBytes } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A stable pseudo size in bytes for a model name (between 1 and 5 GB). */
export function modelSize(name: string): number {
  return 1_000_000_000 + (parseInt(sha256Hex(name).slice(0, 8), 16) % 4_000_000_000);
}

export function randomId(prefix: string, length = 24): string {
  return `${prefix}${randomBytes(length).toString('hex').slice(0, length)}`;
}
