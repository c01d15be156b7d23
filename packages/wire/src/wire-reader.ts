// The protobuf reader every received frame is decoded with: the generated decoders' reader with a cheaper
// `string()` for the common case. The stock reader turns a short ASCII string into an array of char codes and then
// a string (an array of 8 bytes per character: most of what decoding a run event allocated), and a longer one into
// a Uint8Array view for TextDecoder. Here an ASCII string (run ids, most text) is read straight out of the frame's
// Buffer; anything else (non-ASCII, a truncated field) goes to the stock reader, so results and errors are the same.
// Likewise for uint64 fields (below).
import { BinaryReader } from '@iop/proto';

export class WireReader extends BinaryReader {
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    super(bytes);
    this.#bytes = bytes;
  }

  override string(strict?: boolean): string {
    const field = this.pos;
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end <= this.len) {
      const bytes = this.#bytes;
      let index = start;
      while (index < end && bytes[index] < 0x80) index += 1;
      if (index === end) {
        this.pos = end;
        return bytes.toString('latin1', start, end);
      }
    }
    this.pos = field;
    return super.string(strict);
  }

  /**
   * The generated decoders only ever pass a uint64 to `longToNumber`, which takes its `toString()`: a value of up
   * to 7 varint bytes (below 2^49: run sequence numbers, epoch milliseconds) is returned as the number itself
   * (same decimal text) instead of a BigInt. Longer or truncated varints go to the stock reader.
   */
  override uint64(): bigint | string {
    const bytes = this.#bytes;
    const start = this.pos;
    const last = Math.min(start + 7, this.len);
    let value = 0;
    let scale = 1;
    for (let index = start; index < last; index += 1) {
      const byte = bytes[index];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        this.pos = index + 1;
        return value as unknown as bigint;
      }
      scale *= 128;
    }
    return super.uint64();
  }
}
