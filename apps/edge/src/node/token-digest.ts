// Node tokens are known by their SHA-256 only (hex): computing a digest and comparing two in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/** True for a hex SHA-256 digest (either case). */
export function isSha256Hex(value: string): boolean {
  return SHA256_HEX.test(value);
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex SHA-256 digests (false for malformed input, still without early exit). */
export function digestsEqual(leftHex: string, rightHex: string): boolean {
  if (!SHA256_HEX.test(leftHex) || !SHA256_HEX.test(rightHex)) return false;
  return timingSafeEqual(Buffer.from(leftHex, 'hex'), Buffer.from(rightHex, 'hex'));
}
