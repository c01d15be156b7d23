// Incremental frame decoder: bytes from any number of reads in, whole envelopes out. Frames may be split across
// reads or several may arrive in one read. The length prefix is checked against maxFrameBytes before anything is
// buffered for the frame's body, so a hostile prefix costs nothing. A frame that lies inside one read is decoded
// from a view of that read (no copy); a frame split across reads is joined exactly once.
import { decodeFrame, type DecodedEnvelope } from './envelope-codec.js';
import { WireError } from './errors.js';
import { checkMaxFrameBytes, DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES } from './frame-limits.js';

export interface FrameDecoderOptions {
  /** Largest accepted payload; default DEFAULT_MAX_FRAME_BYTES (16 MiB). */
  maxFrameBytes?: number;
  /** Called for a frame whose message kind this build does not know; the frame is skipped. */
  onUnknownKind?: (info: UnknownKindInfo) => void;
}

export interface UnknownKindInfo {
  fieldNumber: number;
  requestId: string;
  frameBytes: number;
}

/** Receives each decoded envelope with the size of its payload (for buffer accounting). */
export type EnvelopeSink = (envelope: DecodedEnvelope, payloadBytes: number) => void;

export class FrameDecoder {
  #maxFrameBytes: number;
  readonly #onUnknownKind: ((info: UnknownKindInfo) => void) | undefined;
  /** Header bytes of the next frame when the header itself was split across reads. */
  readonly #header = Buffer.alloc(FRAME_HEADER_BYTES);
  #headerFilled = 0;
  /** Payload length of the frame being assembled; -1 while reading a header. */
  #bodyLength = -1;
  #bodyChunks: Buffer[] = [];
  #bodyFilled = 0;
  /** Once decoding failed the stream is out of sync: every later call reports the same error. */
  #failure: WireError | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    this.#maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
    this.#onUnknownKind = options.onUnknownKind;
  }

  /** Largest accepted payload. */
  get maxFrameBytes(): number {
    return this.#maxFrameBytes;
  }

  /**
   * Changes the limit for frames whose header has not been read yet (a peer gets a small limit until it has
   * authenticated, then the full one). A frame already being assembled keeps the limit it was checked against.
   */
  set maxFrameBytes(value: number) {
    this.#maxFrameBytes = checkMaxFrameBytes(value);
  }

  /** Bytes of the incomplete frame buffered so far (header included). */
  get pendingBytes(): number {
    return this.#headerFilled + (this.#bodyLength >= 0 ? FRAME_HEADER_BYTES + this.#bodyFilled : 0);
  }

  /**
   * Feeds one read and returns the envelopes it completed, in order. The decoder keeps views of `chunk` for a
   * partial frame, so the caller must not modify the chunk afterwards (socket reads never are).
   * Throws WireError frame_too_large / malformed_frame.
   */
  push(chunk: Uint8Array): DecodedEnvelope[] {
    const envelopes: DecodedEnvelope[] = [];
    this.pushEach(chunk, (envelope) => envelopes.push(envelope));
    return envelopes;
  }

  /**
   * Like push, but hands each envelope to `sink` as soon as it is decoded, so envelopes that precede a bad frame
   * in the same read are delivered before the error is thrown.
   */
  pushEach(chunk: Uint8Array, sink: EnvelopeSink): void {
    if (this.#failure) throw this.#failure;
    const data = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let position = 0;
    while (position < data.length) {
      if (this.#bodyLength < 0) {
        let length: number;
        if (this.#headerFilled === 0 && data.length - position >= FRAME_HEADER_BYTES) {
          length = data.readUInt32BE(position);
          position += FRAME_HEADER_BYTES;
        } else {
          const take = Math.min(FRAME_HEADER_BYTES - this.#headerFilled, data.length - position);
          data.copy(this.#header, this.#headerFilled, position, position + take);
          this.#headerFilled += take;
          position += take;
          if (this.#headerFilled < FRAME_HEADER_BYTES) break;
          this.#headerFilled = 0;
          length = this.#header.readUInt32BE(0);
        }
        if (length > this.maxFrameBytes) {
          this.#fail(
            new WireError(
              'frame_too_large',
              `frame announces ${length} bytes, more than the limit of ${this.maxFrameBytes} bytes`,
            ),
          );
        }
        this.#bodyLength = length;
      }
      const needed = this.#bodyLength - this.#bodyFilled;
      const available = data.length - position;
      if (this.#bodyFilled === 0 && available >= needed) {
        const payload = data.subarray(position, position + needed);
        position += needed;
        this.#bodyLength = -1;
        this.#deliver(payload, sink);
        continue;
      }
      const take = Math.min(needed, available);
      this.#bodyChunks.push(data.subarray(position, position + take));
      this.#bodyFilled += take;
      position += take;
      if (this.#bodyFilled === this.#bodyLength) {
        const payload = Buffer.concat(this.#bodyChunks, this.#bodyLength);
        this.#bodyChunks = [];
        this.#bodyFilled = 0;
        this.#bodyLength = -1;
        this.#deliver(payload, sink);
      }
    }
  }

  /** Declares the end of the byte stream; throws WireError truncated_frame if a frame was left incomplete. */
  finish(): void {
    if (this.#failure) throw this.#failure;
    const pending = this.pendingBytes;
    if (pending > 0) {
      const expected = this.#bodyLength >= 0 ? ` of ${FRAME_HEADER_BYTES + this.#bodyLength}` : '';
      this.#fail(
        new WireError(
          'truncated_frame',
          `stream ended inside a frame (${pending}${expected} bytes received)`,
        ),
      );
    }
  }

  #deliver(payload: Buffer, sink: EnvelopeSink): void {
    let frame;
    try {
      frame = decodeFrame(payload);
    } catch (error) {
      this.#fail(
        error instanceof WireError
          ? error
          : new WireError('malformed_frame', String(error), { cause: error }),
      );
    }
    if (frame.kind === 'envelope') {
      sink(frame.envelope, payload.byteLength);
    } else {
      this.#onUnknownKind?.({
        fieldNumber: frame.fieldNumber,
        requestId: frame.requestId,
        frameBytes: payload.byteLength,
      });
    }
  }

  #fail(error: WireError): never {
    this.#failure = error;
    this.#bodyChunks = [];
    throw error;
  }
}
