// Random bytes for identifiers (run ids, response ids), drawn from one pooled buffer: a synchronous
// randomFillSync per id was ~2 % of the edge's CPU per request, so the pool is refilled from the same CSPRNG once
// per POOL_BYTES instead. Every id still gets fresh bytes that no other id used.
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/** Reserves `bytes` fresh random bytes in the pool; returns their start. */
function take(bytes: number): number {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) {
    throw new RangeError(`random id size must be 1..${POOL_BYTES} bytes, got ${bytes}`);
  }
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += bytes;
  return start;
}

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  const start = take(bytes);
  return pool.toString('hex', start, start + bytes);
}

/** `bytes` random bytes as base64url. */
export function randomBase64Url(bytes: number): string {
  const start = take(bytes);
  return pool.toString('base64url', start, start + bytes);
}
