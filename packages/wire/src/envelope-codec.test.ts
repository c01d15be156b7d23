import { describe, expect, it } from '@jest/globals';
import { runtime } from '@iop/proto';
import { decodeEnvelope, decodeFrame, encodeEnvelope, KNOWN_ENVELOPE_FIELDS } from './envelope-codec.js';
import { WireError } from './errors.js';
import { envelope } from './envelope.js';
import { sampleEnvelopes, sampleRunEvents } from './test-support/sample-envelopes.js';

/** A protobuf tag byte sequence (field number, wire type) as a varint. */
function tag(fieldNumber: number, wireType: number): number[] {
  let value = fieldNumber * 8 + wireType;
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}

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

describe('encodeEnvelope / decodeEnvelope', () => {
  it.each(Object.entries(sampleEnvelopes))('round-trips a %s envelope', (kind, sample) => {
    const decoded = decodeEnvelope(encodeEnvelope(sample));
    expect(decoded.msg.$case).toBe(kind);
    expect(decoded).toEqual(sample);
  });

  it.each(sampleRunEvents.map((event) => [event.event?.$case, event] as const))(
    'round-trips a run event carrying %s',
    (_kind, event) => {
      const sample = envelope.runEvent(event);
      expect(decodeEnvelope(encodeEnvelope(sample))).toEqual(sample);
    },
  );

  it('keeps the request id', () => {
    const sample = envelope.nodeCommandRequest('req-42', { command: 'status' });
    expect(decodeEnvelope(encodeEnvelope(sample)).requestId).toBe('req-42');
  });

  it('rejects an empty payload as an envelope without a message', () => {
    const error = expectWireError(() => decodeEnvelope(new Uint8Array()), 'malformed_frame');
    expect(error.message).toMatch(/no message/);
  });

  it('rejects an envelope that has only a request id', () => {
    expectWireError(
      () => decodeEnvelope(encodeEnvelope({ requestId: 'x', msg: undefined })),
      'malformed_frame',
    );
  });

  it('rejects garbage bytes with malformed_frame and keeps the cause', () => {
    const error = expectWireError(
      () => decodeEnvelope(Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])),
      'malformed_frame',
    );
    expect(error.cause).toBeDefined();
    expect(error.transient).toBe(false);
  });

  it('rejects a truncated nested message', () => {
    const bytes = encodeEnvelope(sampleEnvelopes.runRequest);
    expectWireError(() => decodeEnvelope(bytes.subarray(0, bytes.length - 3)), 'malformed_frame');
  });

  it('rejects a uint64 beyond the safe integer range', () => {
    // heartbeat_ping { seq = 2^63 }
    const heartbeat = [...tag(1, 0), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    const bytes = Uint8Array.from([...tag(12, 2), heartbeat.length, ...heartbeat]);
    expectWireError(() => decodeEnvelope(bytes), 'malformed_frame');
  });

  it('treats a known message field with the wrong wire type as malformed, not as an unknown kind', () => {
    const bytes = Uint8Array.from([...tag(12, 0), 0x05]);
    expectWireError(() => decodeFrame(bytes), 'malformed_frame');
  });

  it('reports a message kind from a newer protocol revision as unknown instead of failing', () => {
    const body = [...tag(1, 2), 2, 0x68, 0x69];
    const bytes = Uint8Array.from([...tag(1, 2), 3, 0x72, 0x2d, 0x31, ...tag(40, 2), body.length, ...body]);
    expect(decodeFrame(bytes)).toEqual({ kind: 'unknown', fieldNumber: 40, requestId: 'r-1' });
    expect(expectWireError(() => decodeEnvelope(bytes), 'malformed_frame').message).toMatch(
      /unknown message kind/,
    );
  });

  it('ignores unknown fields next to a known message', () => {
    const known = encodeEnvelope(sampleEnvelopes.heartbeatPing);
    const bytes = Uint8Array.from([...known, ...tag(99, 0), 0x01]);
    expect(decodeEnvelope(bytes)).toEqual(sampleEnvelopes.heartbeatPing);
  });

  it('lists exactly the field numbers the generated Envelope uses', () => {
    const numbers = new Set<number>([1]);
    for (const sample of Object.values(sampleEnvelopes)) {
      const bytes = runtime.Envelope.encode({ requestId: '', msg: sample.msg }).finish();
      // First byte(s) are the tag of the only field present.
      let value = 0;
      let multiplier = 1;
      for (const byte of bytes) {
        value += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        if ((byte & 0x80) === 0) break;
      }
      numbers.add(Math.floor(value / 8));
    }
    expect([...numbers].sort((a, b) => a - b)).toEqual([...KNOWN_ENVELOPE_FIELDS].sort((a, b) => a - b));
  });
});
