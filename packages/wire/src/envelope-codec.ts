// Envelope ⇄ protobuf bytes. The only place that calls the generated encoder/decoder for whole frames, so every
// decoding failure (bad varint, truncated field, value out of range, no message) becomes one typed error.
import { runtime } from '@iop/proto';
import { WireError } from './errors.js';
import { WireReader } from './wire-reader.js';
import type { Envelope, EnvelopeMessage } from './messages.js';

/** An Envelope that carries a message (what decodeEnvelope returns). */
export type DecodedEnvelope = Envelope & { msg: EnvelopeMessage };

/**
 * Result of decoding one frame: an envelope, or a message kind this build does not know (a newer peer's
 * addition). Unknown kinds are skipped by the receiver with a log line; they are not errors.
 */
export type DecodedFrame =
  | { kind: 'envelope'; envelope: DecodedEnvelope }
  | { kind: 'unknown'; fieldNumber: number; requestId: string };

/**
 * Field numbers of Envelope's own fields (request_id = 1, the `msg` cases 10..26). A field outside this set in an
 * envelope without a known message is a message kind added by a newer protocol revision.
 */
export const KNOWN_ENVELOPE_FIELDS: ReadonlySet<number> = new Set([
  1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
]);

const WIRE_TYPE_LEN = 2;

export function encodeEnvelope(envelope: Envelope): Uint8Array {
  return runtime.Envelope.encode(envelope).finish();
}

/** Decodes one envelope; throws WireError `malformed_frame` for bad bytes and for envelopes without a message. */
export function decodeEnvelope(bytes: Uint8Array): DecodedEnvelope {
  const frame = decodeFrame(bytes);
  if (frame.kind === 'unknown') {
    throw new WireError(
      'malformed_frame',
      `envelope carries an unknown message kind (field ${frame.fieldNumber}); a newer peer?`,
    );
  }
  return frame.envelope;
}

/** Like decodeEnvelope, but reports an unknown message kind instead of throwing. */
export function decodeFrame(bytes: Uint8Array): DecodedFrame {
  let envelope: Envelope;
  try {
    // Frames arrive as Buffers (socket reads); the wire reader decodes their strings without copies.
    envelope = runtime.Envelope.decode(Buffer.isBuffer(bytes) ? new WireReader(bytes) : bytes);
  } catch (error) {
    throw new WireError('malformed_frame', `invalid envelope: ${describe(error)}`, { cause: error });
  }
  if (envelope.msg) return { kind: 'envelope', envelope: envelope as DecodedEnvelope };
  const unknownField = findUnknownMessageField(bytes);
  if (unknownField !== undefined) {
    return { kind: 'unknown', fieldNumber: unknownField, requestId: envelope.requestId };
  }
  throw new WireError('malformed_frame', 'envelope carries no message');
}

/**
 * Scans the top-level fields of bytes the generated decoder already accepted and returns the first
 * length-delimited field that Envelope does not define. Known field numbers with the wrong wire type are not
 * "unknown kinds": they are corruption, and stay errors.
 */
function findUnknownMessageField(bytes: Uint8Array): number | undefined {
  let position = 0;
  const readVarint = (): number => {
    let result = 0;
    let multiplier = 1;
    for (let index = 0; index < 10; index += 1) {
      if (position >= bytes.length) throw new RangeError('varint past end');
      const byte = bytes[position++];
      result += (byte & 0x7f) * multiplier;
      if ((byte & 0x80) === 0) return result;
      multiplier *= 128;
    }
    throw new RangeError('varint too long');
  };
  try {
    while (position < bytes.length) {
      const tag = readVarint();
      const fieldNumber = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (wireType === WIRE_TYPE_LEN && !KNOWN_ENVELOPE_FIELDS.has(fieldNumber)) return fieldNumber;
      switch (wireType) {
        case 0:
          readVarint();
          break;
        case 1:
          position += 8;
          break;
        case 2: {
          // Read the length first: `position += readVarint()` would add to the position before the varint.
          const length = readVarint();
          position += length;
          break;
        }
        case 5:
          position += 4;
          break;
        default:
          // Groups (3, 4) are not used by this protocol; treat them as the end of anything recognisable.
          return undefined;
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
