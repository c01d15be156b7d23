import { describe, expect, it } from '@jest/globals';
import { BinaryReader } from '@iop/proto';
import { encodeEnvelope } from './envelope-codec.js';
import { sampleEnvelopes, sampleRunEvents } from './test-support/sample-envelopes.js';
import { envelope } from './envelope.js';
import { WireReader } from './wire-reader.js';
import { runtime } from '@iop/proto';

/** A length-delimited string field (number 1) holding `bytes`. */
function stringField(bytes: number[]): Buffer {
  return Buffer.from([0x0a, bytes.length, ...bytes]);
}

function readString(reader: BinaryReader): string {
  reader.uint32(); // the tag
  return reader.string();
}

describe('WireReader', () => {
  it.each([
    ['empty', ''],
    ['short ASCII', 'run-abc123'],
    ['long ASCII', 'x'.repeat(200)],
    ['non-ASCII', 'héllo wörld ✓ 🎉'],
    ['ASCII then non-ASCII', `${'a'.repeat(40)}é`],
  ])('reads a %s string like the stock reader', (_label, text) => {
    const bytes = [...Buffer.from(text, 'utf8')];
    const encoded = Buffer.concat([
      Buffer.from([0x0a]),
      Buffer.from(encodeLength(bytes.length)),
      Buffer.from(bytes),
    ]);
    const wire = new WireReader(encoded);
    const stock = new BinaryReader(new Uint8Array(encoded));
    expect(readString(wire)).toBe(text);
    expect(readString(stock)).toBe(text);
    expect(wire.pos).toBe(stock.pos);
  });

  it('replaces invalid UTF-8 as the stock reader does', () => {
    const encoded = stringField([0x61, 0xff, 0xc3, 0x62]);
    expect(readString(new WireReader(encoded))).toBe(readString(new BinaryReader(new Uint8Array(encoded))));
  });

  it('throws the stock error for a string past the end of the frame', () => {
    const encoded = Buffer.from([0x0a, 10, 0x61, 0x62]);
    expect(() => readString(new WireReader(encoded))).toThrow('premature EOF');
  });

  it('decodes every sample envelope and run event from a Buffer as from bytes', () => {
    const samples = [
      ...Object.values(sampleEnvelopes),
      ...sampleRunEvents.map((event) => envelope.runEvent(event)),
    ];
    for (const sample of samples) {
      const bytes = encodeEnvelope(sample);
      const fromBuffer = runtime.Envelope.decode(new WireReader(Buffer.from(bytes)));
      expect(fromBuffer).toEqual(runtime.Envelope.decode(bytes));
      expect(fromBuffer).toEqual(sample);
    }
  });
});

function encodeLength(length: number): number[] {
  const bytes: number[] = [];
  let value = length;
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}

describe('WireReader.uint64', () => {
  it.each([0, 1, 127, 128, 300, 2 ** 31, 1_764_590_000_000, 2 ** 49 - 1, 2 ** 49, 2 ** 53 - 1])(
    'reads %d to the same number as the stock reader',
    (value) => {
      const bytes = Buffer.from(runtime.RunEvent.encode({ runId: '', seq: value, atUnixMs: 0 }).finish());
      const wire = runtime.RunEvent.decode(new WireReader(bytes));
      expect(wire.seq).toBe(value);
      expect(wire).toEqual(runtime.RunEvent.decode(new Uint8Array(bytes)));
    },
  );

  it('throws like the stock reader for a value above Number.MAX_SAFE_INTEGER', () => {
    const bytes = Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(() => runtime.RunEvent.decode(new WireReader(bytes))).toThrow(
      'larger than Number.MAX_SAFE_INTEGER',
    );
  });

  it('throws the stock error for a varint cut off by the end of the frame', () => {
    const bytes = Buffer.from([0x10, 0xff, 0xff]);
    expect(() => runtime.RunEvent.decode(new WireReader(bytes))).toThrow('premature EOF');
    expect(() => runtime.RunEvent.decode(new Uint8Array(bytes))).toThrow('premature EOF');
  });
});
