import { describe, expect, it, jest } from '@jest/globals';
import { envelope } from './envelope.js';
import { WireError } from './errors.js';
import { FrameDecoder } from './frame-decoder.js';
import { encodeFrame } from './frame-encoder.js';
import type { Envelope } from './messages.js';
import { sampleEnvelopes } from './test-support/sample-envelopes.js';
import { seededRandom } from './test-support/seeded-random.js';

const samples = Object.values(sampleEnvelopes);
const stream = Buffer.concat(samples.map((sample) => encodeFrame(sample)));

function expectWireError(action: () => unknown, code: WireError['code']): WireError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).code).toBe(code);
    return error as WireError;
  }
  throw new Error(`expected WireError ${code}`);
}

function feed(decoder: FrameDecoder, chunks: Buffer[]): Envelope[] {
  const out: Envelope[] = [];
  for (const chunk of chunks) out.push(...decoder.push(chunk));
  decoder.finish();
  return out;
}

describe('FrameDecoder', () => {
  it('decodes several frames coalesced in one read', () => {
    const decoder = new FrameDecoder();
    expect(feed(decoder, [stream])).toEqual(samples);
    expect(decoder.pendingBytes).toBe(0);
  });

  it('decodes frames fed one byte at a time', () => {
    const decoder = new FrameDecoder();
    const chunks = [...stream].map((byte) => Buffer.from([byte]));
    expect(feed(decoder, chunks)).toEqual(samples);
  });

  it('decodes frames under random splits (seeded)', () => {
    const random = seededRandom(0x5eed);
    for (let round = 0; round < 200; round += 1) {
      const chunks: Buffer[] = [];
      let position = 0;
      while (position < stream.length) {
        const size = 1 + random.int(round % 2 === 0 ? 16 : 700);
        chunks.push(stream.subarray(position, position + size));
        position += size;
      }
      expect(feed(new FrameDecoder(), chunks)).toEqual(samples);
    }
  });

  it('accepts Uint8Array chunks that are not Buffers', () => {
    const frame = encodeFrame(sampleEnvelopes.heartbeatPing);
    const copy = new Uint8Array(frame.byteLength + 8);
    copy.set(frame, 8);
    expect(new FrameDecoder().push(copy.subarray(8))).toEqual([sampleEnvelopes.heartbeatPing]);
  });

  it('reports pendingBytes for a partial header and a partial body', () => {
    const decoder = new FrameDecoder();
    const frame = encodeFrame(sampleEnvelopes.goodbye);
    decoder.push(frame.subarray(0, 2));
    expect(decoder.pendingBytes).toBe(2);
    decoder.push(frame.subarray(2, 4));
    expect(decoder.pendingBytes).toBe(4);
    decoder.push(frame.subarray(4, 9));
    expect(decoder.pendingBytes).toBe(9);
    expect(decoder.push(frame.subarray(9))).toEqual([sampleEnvelopes.goodbye]);
    expect(decoder.pendingBytes).toBe(0);
  });

  it('rejects a length prefix over maxFrameBytes as soon as the prefix is read', () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 1024 });
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1025);
    const error = expectWireError(() => decoder.push(header), 'frame_too_large');
    expect(error.message).toMatch(/1025/);
    // The stream is out of sync now: every later call reports the same failure.
    expect(() => decoder.push(Buffer.from([1]))).toThrow(error);
    expect(() => decoder.finish()).toThrow(error);
  });

  it('rejects a 4 GiB length prefix split across reads without allocating it', () => {
    const decoder = new FrameDecoder();
    decoder.push(Buffer.from([0xff, 0xff]));
    expectWireError(() => decoder.push(Buffer.from([0xff, 0xff, 0x00])), 'frame_too_large');
  });

  it('accepts a frame exactly at maxFrameBytes', () => {
    const message = envelope.goodbye('x', 'y'.repeat(100));
    const frame = encodeFrame(message);
    const decoder = new FrameDecoder({ maxFrameBytes: frame.byteLength - 4 });
    expect(decoder.push(frame)).toEqual([message]);
  });

  it('reports a stream that ends inside a header or a body as truncated', () => {
    const frame = encodeFrame(sampleEnvelopes.runRequest);
    for (const cut of [1, 3, 4, 5, frame.length - 1]) {
      const decoder = new FrameDecoder();
      decoder.push(frame.subarray(0, cut));
      expectWireError(() => decoder.finish(), 'truncated_frame');
    }
    const complete = new FrameDecoder();
    complete.push(frame);
    expect(() => complete.finish()).not.toThrow();
  });

  it('rejects a zero-length frame (an envelope without a message)', () => {
    expectWireError(() => new FrameDecoder().push(Buffer.alloc(4)), 'malformed_frame');
  });

  it('rejects a frame whose payload is garbage', () => {
    const garbage = Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff]);
    expectWireError(() => new FrameDecoder().push(garbage), 'malformed_frame');
  });

  it('hands envelopes preceding a bad frame to pushEach before throwing', () => {
    const good = encodeFrame(sampleEnvelopes.heartbeatPing);
    const bad = Buffer.from([0, 0, 0, 2, 0xff, 0xff]);
    const seen: Envelope[] = [];
    expect(() =>
      new FrameDecoder().pushEach(Buffer.concat([good, good, bad]), (message) => seen.push(message)),
    ).toThrow(WireError);
    expect(seen).toHaveLength(2);
  });

  it('skips a frame of an unknown message kind and reports it', () => {
    const onUnknownKind = jest.fn();
    const decoder = new FrameDecoder({ onUnknownKind });
    const unknownPayload = Buffer.from([0xc2, 0x02, 0x02, 0x08, 0x01]); // field 40, LEN, { 1: 1 }
    const unknownFrame = Buffer.concat([Buffer.from([0, 0, 0, unknownPayload.length]), unknownPayload]);
    const ping = encodeFrame(sampleEnvelopes.heartbeatPing);
    expect(decoder.push(Buffer.concat([unknownFrame, ping]))).toEqual([sampleEnvelopes.heartbeatPing]);
    expect(onUnknownKind).toHaveBeenCalledWith({ fieldNumber: 40, requestId: '', frameBytes: 5 });
  });

  it('validates maxFrameBytes', () => {
    expect(() => new FrameDecoder({ maxFrameBytes: 0 })).toThrow(RangeError);
    expect(() => new FrameDecoder({ maxFrameBytes: Number.NaN })).toThrow(RangeError);
  });

  it('never throws anything but WireError for 10,000 mutated frame streams (seeded)', () => {
    const random = seededRandom(20261129);
    const frames = samples.map((sample) => encodeFrame(sample));
    const outcomes = { ok: 0, wireErrors: new Map<string, number>() };
    for (let iteration = 0; iteration < 10_000; iteration += 1) {
      const base = Buffer.from(frames[random.int(frames.length)]);
      const mutated = mutate(base, random);
      const decoder = new FrameDecoder({ maxFrameBytes: 64 * 1024 });
      try {
        let position = 0;
        while (position < mutated.length) {
          const size = 1 + random.int(64);
          decoder.push(mutated.subarray(position, position + size));
          position += size;
        }
        decoder.finish();
        outcomes.ok += 1;
      } catch (error) {
        if (!(error instanceof WireError)) {
          throw new Error(`iteration ${iteration} threw ${String(error)}`, { cause: error });
        }
        outcomes.wireErrors.set(error.code, (outcomes.wireErrors.get(error.code) ?? 0) + 1);
      }
    }
    // The mutations must actually exercise the error paths, not only the happy path.
    expect(outcomes.wireErrors.get('malformed_frame')).toBeGreaterThan(100);
    expect(outcomes.wireErrors.get('frame_too_large')).toBeGreaterThan(100);
    expect(outcomes.wireErrors.get('truncated_frame')).toBeGreaterThan(100);
    expect(outcomes.ok).toBeGreaterThan(100);
  });
});

function mutate(frame: Buffer, random: ReturnType<typeof seededRandom>): Buffer {
  const copy = Buffer.from(frame);
  switch (random.int(6)) {
    case 0: {
      // Flip a few bits anywhere (prefix included).
      for (let flips = 1 + random.int(4); flips > 0; flips -= 1)
        copy[random.int(copy.length)] ^= 1 << random.int(8);
      return copy;
    }
    case 1:
      // Truncate.
      return copy.subarray(0, random.int(copy.length));
    case 2: {
      // Random length prefix over a valid payload.
      copy.writeUInt32BE(random.next() < 0.5 ? random.int(0x1_0000_0000) : random.int(copy.length * 2));
      return copy;
    }
    case 3: {
      // Random bytes in place of the payload, correct prefix.
      for (let index = 4; index < copy.length; index += 1) copy[index] = random.int(256);
      return copy;
    }
    case 4: {
      // Insert random bytes inside the payload and fix the prefix so the decoder sees them.
      const at = 4 + random.int(copy.length - 4);
      const noise = Buffer.from(Array.from({ length: 1 + random.int(8) }, () => random.int(256)));
      const result = Buffer.concat([copy.subarray(0, at), noise, copy.subarray(at)]);
      result.writeUInt32BE(result.length - 4);
      return result;
    }
    default: {
      // Overwrite a byte of the payload, then append a second valid frame.
      const at = 4 + random.int(copy.length - 4);
      copy[at] = random.int(256);
      return Buffer.concat([copy, frame]);
    }
  }
}
