// Envelope → one length-prefixed frame (4-byte big-endian payload length, then the protobuf payload).
import { encodeEnvelope } from './envelope-codec.js';
import { WireError } from './errors.js';
import { DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES } from './frame-limits.js';
import type { Envelope } from './messages.js';

/**
 * Encodes one frame. Throws WireError `frame_too_large` when the payload exceeds `maxFrameBytes`: the receiver
 * would close the connection on it, so the sender fails the one message instead.
 */
export function encodeFrame(envelope: Envelope, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): Buffer {
  const payload = encodeEnvelope(envelope);
  if (payload.byteLength > maxFrameBytes) {
    throw new WireError(
      'frame_too_large',
      `envelope of ${payload.byteLength} bytes exceeds the frame limit of ${maxFrameBytes} bytes`,
    );
  }
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.byteLength);
  frame.writeUInt32BE(payload.byteLength, 0);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}
