// Envelope → one length-prefixed frame (4-byte big-endian payload length, then the protobuf payload).
import { BinaryWriter, runtime } from '@iop/proto';
import { WireError } from './errors.js';
import { DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES } from './frame-limits.js';
import type { Envelope } from './messages.js';

/**
 * One protobuf writer for every frame this process encodes (encoding is synchronous, so frames never share it at
 * the same time). It keeps its buffer's capacity between frames: a frame is encoded behind a reserved header and
 * copied out once, instead of a fresh 128-byte buffer per message that grows by doubling, a copy out of it and
 * another into the frame. Replaced after a failed encode (its state is unknown) and after a frame larger than
 * SHARED_WRITER_MAX_BYTES (so one large frame does not stay allocated).
 */
let sharedWriter = new BinaryWriter();
const SHARED_WRITER_MAX_BYTES = 256 * 1024;
const HEADER_PLACEHOLDER = new Uint8Array(FRAME_HEADER_BYTES);

/**
 * Encodes one frame. Throws WireError `frame_too_large` when the payload exceeds `maxFrameBytes`: the receiver
 * would close the connection on it, so the sender fails the one message instead.
 */
export function encodeFrame(envelope: Envelope, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): Buffer {
  const writer = sharedWriter;
  let bytes: Uint8Array;
  try {
    writer.raw(HEADER_PLACEHOLDER);
    runtime.Envelope.encode(envelope, writer);
    bytes = writer.finish();
  } catch (error) {
    sharedWriter = new BinaryWriter();
    throw error;
  }
  if (bytes.byteLength > SHARED_WRITER_MAX_BYTES) sharedWriter = new BinaryWriter();
  const payloadBytes = bytes.byteLength - FRAME_HEADER_BYTES;
  if (payloadBytes > maxFrameBytes) {
    throw new WireError(
      'frame_too_large',
      `envelope of ${payloadBytes} bytes exceeds the frame limit of ${maxFrameBytes} bytes`,
    );
  }
  // finish() returned a copy of its own: the frame is a view of it, with the header written in place.
  const frame = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  frame.writeUInt32BE(payloadBytes, 0);
  return frame;
}
