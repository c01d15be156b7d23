// Framing constants shared by the encoder and the decoder.

/** Every frame starts with its payload length as an unsigned 32-bit big-endian integer. */
export const FRAME_HEADER_BYTES = 4;

/** Largest payload accepted by default (16 MiB). Both sides must agree; the contract documents this value. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** The header can express at most 2^32 - 1 bytes; a limit above that would never trigger. */
export const MAX_FRAME_BYTES_LIMIT = 0xffff_ffff;

/** Validates a configured limit so a typo (0, NaN, negative) fails loudly at construction. */
export function checkMaxFrameBytes(value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_FRAME_BYTES_LIMIT) {
    throw new RangeError(`maxFrameBytes must be an integer in 1..${MAX_FRAME_BYTES_LIMIT}, got ${value}`);
  }
  return value;
}
