import { describe, expect, it } from '@jest/globals';
import { decodeEnvelope, encodeEnvelope } from './envelope-codec.js';
import { envelope } from './envelope.js';
import { WireError } from './errors.js';
import { encodeFrame } from './frame-encoder.js';
import { DEFAULT_MAX_FRAME_BYTES } from './frame-limits.js';

describe('encodeFrame', () => {
  it('prefixes the payload with its length as a 4-byte big-endian integer', () => {
    const message = envelope.goodbye('shutdown', 'x'.repeat(300));
    const frame = encodeFrame(message);
    const payload = encodeEnvelope(message);
    expect(frame.readUInt32BE(0)).toBe(payload.byteLength);
    expect(frame.byteLength).toBe(4 + payload.byteLength);
    expect(frame.subarray(4)).toEqual(Buffer.from(payload));
    expect([...frame.subarray(0, 4)]).toEqual([
      0,
      0,
      (payload.byteLength >> 8) & 0xff,
      payload.byteLength & 0xff,
    ]);
  });

  it('defaults to a 16 MiB limit', () => {
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(16 * 1024 * 1024);
  });

  it('refuses to encode a payload larger than maxFrameBytes', () => {
    const message = envelope.goodbye('shutdown', 'x'.repeat(200));
    expect(() => encodeFrame(message, 100)).toThrow(WireError);
    try {
      encodeFrame(message, 100);
    } catch (error) {
      expect((error as WireError).code).toBe('frame_too_large');
    }
    expect(encodeFrame(message, 1000).byteLength).toBeGreaterThan(200);
  });

  it('gives every frame bytes of its own, across large frames and a failed encode', () => {
    const decode = (frame: Buffer) => decodeEnvelope(frame.subarray(4));
    const first = encodeFrame(envelope.goodbye('first', 'a'.repeat(50)));
    const large = encodeFrame(envelope.goodbye('large', 'b'.repeat(300 * 1024)));
    // A value the encoder rejects midway (a negative uint32, after the run id) leaves no state behind.
    const usage = {
      promptTokens: -1,
      completionTokens: 0,
      totalTokens: 0,
      reasoningTokens: 0,
      cachedTokens: 0,
    };
    expect(() =>
      encodeFrame(
        envelope.runEvent({
          runId: 'run-1',
          seq: 1,
          atUnixMs: 1,
          event: { $case: 'usage', usage: { ...usage, costUsd: 0 } },
        }),
      ),
    ).toThrow(/uint32/);
    const last = encodeFrame(envelope.goodbye('last', 'c'.repeat(10)));
    expect(decode(first).msg).toEqual({
      $case: 'goodbye',
      goodbye: { reason: 'first', detail: 'a'.repeat(50) },
    });
    expect(decode(large).msg).toEqual({
      $case: 'goodbye',
      goodbye: { reason: 'large', detail: 'b'.repeat(300 * 1024) },
    });
    expect(decode(last).msg).toEqual({
      $case: 'goodbye',
      goodbye: { reason: 'last', detail: 'c'.repeat(10) },
    });
    expect(last.readUInt32BE(0)).toBe(last.byteLength - 4);
  });
});
