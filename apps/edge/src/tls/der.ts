// A minimal DER encoder: just the ASN.1 types one self-signed X.509 certificate needs (SEQUENCE, SET, INTEGER,
// OBJECT IDENTIFIER, strings, times, BIT/OCTET STRING, BOOLEAN, context tags). Values are built bottom-up as
// Buffers; nothing is parsed here (Node's X509Certificate reads the result back in the tests).

/** Tag + definite length + contents. */
export function derTlv(tag: number, contents: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(contents.length), contents]);
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function derSequence(...items: Buffer[]): Buffer {
  return derTlv(0x30, Buffer.concat(items));
}

export function derSet(...items: Buffer[]): Buffer {
  return derTlv(0x31, Buffer.concat(items));
}

/** INTEGER from unsigned big-endian bytes (a 0x00 is prepended when the high bit is set; leading zeros trimmed). */
export function derUnsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start += 1;
  const trimmed = bytes.subarray(start);
  const needsPad = (trimmed[0] ?? 0) & 0x80;
  return derTlv(0x02, needsPad ? Buffer.concat([Buffer.from([0]), trimmed]) : Buffer.from(trimmed));
}

export function derSmallInteger(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff)
    throw new RangeError(`bad integer ${value}`);
  const bytes: number[] = [];
  let rest = value;
  do {
    bytes.unshift(rest & 0xff);
    rest = Math.floor(rest / 256);
  } while (rest > 0);
  return derUnsignedInteger(Buffer.from(bytes));
}

export function derBoolean(value: boolean): Buffer {
  return derTlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

/** OBJECT IDENTIFIER from dotted text ("1.2.840.10045.4.3.2"). */
export function derOid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((arc) => Number(arc));
  if (arcs.length < 2 || arcs.some((arc) => !Number.isInteger(arc) || arc < 0)) {
    throw new RangeError(`bad object identifier ${dotted}`);
  }
  const [first = 0, second = 0, ...rest] = arcs;
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const chunk: number[] = [arc & 0x7f];
    for (let value = Math.floor(arc / 128); value > 0; value = Math.floor(value / 128)) {
      chunk.unshift(0x80 | (value & 0x7f));
    }
    bytes.push(...chunk);
  }
  return derTlv(0x06, Buffer.from(bytes));
}

export function derUtf8String(text: string): Buffer {
  return derTlv(0x0c, Buffer.from(text, 'utf8'));
}

export function derOctetString(bytes: Buffer): Buffer {
  return derTlv(0x04, bytes);
}

/** BIT STRING with no unused bits. */
export function derBitString(bytes: Buffer): Buffer {
  return derTlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
}

/** UTCTime for 1950–2049, GeneralizedTime otherwise (RFC 5280 §4.1.2.5), always whole seconds in UTC. */
export function derTime(date: Date): Buffer {
  const pad = (value: number) => String(value).padStart(2, '0');
  const year = date.getUTCFullYear();
  const rest =
    pad(date.getUTCMonth() + 1) +
    pad(date.getUTCDate()) +
    pad(date.getUTCHours()) +
    pad(date.getUTCMinutes()) +
    pad(date.getUTCSeconds()) +
    'Z';
  if (year >= 1950 && year < 2050) return derTlv(0x17, Buffer.from(`${pad(year % 100)}${rest}`, 'ascii'));
  return derTlv(0x18, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'ascii'));
}

/** [n] EXPLICIT (constructed, wraps a whole encoding). */
export function derExplicit(tagNumber: number, inner: Buffer): Buffer {
  return derTlv(0xa0 | tagNumber, inner);
}

/** [n] IMPLICIT primitive (replaces the tag of a primitive value; contents given raw). */
export function derImplicitPrimitive(tagNumber: number, contents: Buffer): Buffer {
  return derTlv(0x80 | tagNumber, contents);
}
