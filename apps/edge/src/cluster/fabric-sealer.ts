// Seals and opens what the edges of a fabric exchange over NATS: AES-256-GCM with the fabric key, bound to where
// the message goes (and, for a request, to the receiver's incarnation), stamped with the sender's edge id, a time
// and a nonce the sealer drew itself.
//
//   sealed    = version(1) · key id(4) · sender length(1) · sender(utf-8) · nonce(12) · ciphertext · tag(16)
//   plaintext = sender length(1) · sender · sent at ms(8, big endian) · boot length(1) · receiver boot id
//               · context length(2) · context · data
//   context: `msg <subject> <reply subject>` for a message (reply '' when none), `kv <bucket> <key>` for a KV value
//   receiver boot id: the random id the receiving edge published in its sealed state ('' for a message bound to
//               no incarnation: answers, events, KV values); the fabric bus drops a request naming another boot
//
// No additional authenticated data: what the receiver must trust (sender, time, boot, context) is inside the
// ciphertext, and the header's key id and nonce are bound by the key and the IV. The sender is also in clear, to
// name the claimed source of what does not open; it must equal the sealed one. One OpenSSL call fewer per seal
// and per open (setAAD), which on a loaded host costs as much as the encryption (bench/README.md).
//
// Nonces: AES-GCM's one rule is that a key never seals two messages with one nonce. A sealer only ever uses
// nonces it drew itself: a random 8-byte prefix per sealer (drawn again after 2^32 seals) and a 4-byte counter.
// Nothing a peer sends can choose or repeat a nonce here; two processes collide only if they draw the same
// 64-bit prefix.
//
// A message opens only with a key of the ring, unchanged, on the subject (and reply subject) it was sealed for,
// within `maxSkewMs` of this edge's clock, not stamped before this edge started, and once: each sender's nonces
// are remembered until their time leaves the window (bounded per sender; when a sender's cache is full the oldest
// are forgotten and every message sent no later than the newest forgotten one is refused, so a replay never
// passes). A restarted edge holds no nonces of its earlier life: what was sent before it started is refused, and a
// request recorded before the restart names the earlier boot id (even when a peer's clock runs ahead), so the bus
// drops it. KV values carry no replay cache (they are read again by design); they must be younger than the
// bucket's TTL and never older than the last value accepted for the same key (SealedKv in fabric-bus.ts).
//
// Off a run's path: creating an OpenSSL cipher is most of a seal's cost, and on a loaded host, where each edge
// runs a few times per request with cold caches, it costs 60-80 µs (against 5 µs in a loop). So the sealer makes
// a few ciphers ahead for its own next nonces, in the turn after it used one (`defer`); opens make their decipher
// in place. The work left on a message's path is pure JavaScript but for update, final and the tag (nonce keys,
// sender names and context checks avoid Buffer's C++ helpers).
import { createCipheriv, createDecipheriv, randomFillSync, type CipherGCM } from 'node:crypto';
import { KEY_ID_BYTES, type FabricKey, type FabricKeyring } from './fabric-keyring.js';

export const SEAL_VERSION = 3;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const TIME_BYTES = 8;
const CONTEXT_LENGTH_BYTES = 2;
const BOOT_LENGTH_BYTES = 1;
/** A boot id is at most this long (ASCII). */
export const MAX_BOOT_BYTES = 64;
const MAX_CONTEXT_BYTES = 0xffff;
const WORD = 0x1_0000_0000;
/** Default accepted clock difference between two edges (and age of a message in flight). */
export const DEFAULT_MAX_SKEW_MS = 30_000;
/** Nonces remembered per sender (messages within two skew windows; beyond it the oldest are forgotten). */
export const DEFAULT_REPLAY_CACHE_PER_SENDER = 200_000;
/** Senders whose nonces are remembered (edges of one fabric; authenticated senders only). */
const MAX_SENDERS = 256;

/** Why a message was dropped (the `reason` label of iop_cluster_rejected_total). */
export type RejectReason =
  /** Not a sealed message of this version (too short, bad header). */
  | 'malformed'
  /** Sealed with a key this edge does not hold. */
  | 'unknown_key'
  /** The key did not open it: changed, sealed for another subject or KV key, or forged. */
  | 'auth_failed'
  /** Its time is outside the accepted window (an old capture, or a clock too far off). */
  | 'stale'
  /** Seen before (a replay), or older than a value already accepted for the same KV key. */
  | 'replay'
  /** A KV delete or purge: it carries nothing to authenticate, so it is not trusted. */
  | 'unsealed';

export const REJECT_REASONS: readonly RejectReason[] = [
  'malformed',
  'unknown_key',
  'auth_failed',
  'stale',
  'replay',
  'unsealed',
];

export type Opened =
  | {
      ok: true;
      sender: string;
      sentAtMs: number;
      /** The nonce as a short string (for equality only; not base64). */
      nonce: string;
      /** The receiver boot id the sender named ('' when bound to no incarnation). */
      boot: string;
      data: Uint8Array;
    }
  | {
      ok: false;
      reason: RejectReason;
      /** The sender the header names (unauthenticated), '' if unreadable. */ claimed: string;
    };

export interface FabricSealerOptions {
  keyring: FabricKeyring;
  /** This edge's id: the sender of everything it seals. */
  sender: string;
  /** Epoch ms. */
  now: () => number;
  maxSkewMs?: number;
  replayCachePerSender?: number;
  /** Runs work after the current turn, where the ciphers for the next seals and opens are made (setImmediate). */
  defer?: (work: () => void) => void;
}

/** Ciphers for this sealer's next nonces kept ready (a burst larger than this makes the rest in place). */
const READY_CIPHERS = 4;
/** What is sealed: bytes, or a text sealed as its UTF-8 bytes (written straight into the plaintext, no copy). */
export type SealPayload = Uint8Array | string;

export function messageContext(subject: string, reply: string | undefined): string {
  return `msg ${subject} ${reply ?? ''}`;
}

export function kvContext(bucket: string, key: string): string {
  return `kv ${bucket} ${key}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * This sealer's nonces: a random 8-byte prefix and a 4-byte counter. Never the same nonce twice from one
 * sequence; a new prefix is drawn before the counter would wrap.
 */
export class NonceSequence {
  private readonly prefix = Buffer.allocUnsafe(8);
  private counter = 0;

  constructor() {
    randomFillSync(this.prefix);
  }

  /** A nonce of its own. */
  next(): Buffer {
    if (this.counter > 0xffff_ffff) {
      randomFillSync(this.prefix);
      this.counter = 0;
    }
    const nonce = Buffer.allocUnsafe(NONCE_BYTES);
    this.prefix.copy(nonce, 0);
    nonce.writeUInt32BE(this.counter, 8);
    this.counter += 1;
    return nonce;
  }
}

/** A nonce's 12 bytes as a 6-character string: the key of the replay cache (no C++ call). */
function nonceKey(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(
    (bytes[at] << 8) | bytes[at + 1],
    (bytes[at + 2] << 8) | bytes[at + 3],
    (bytes[at + 4] << 8) | bytes[at + 5],
    (bytes[at + 6] << 8) | bytes[at + 7],
    (bytes[at + 8] << 8) | bytes[at + 9],
    (bytes[at + 10] << 8) | bytes[at + 11],
  );
}

/** Writes `text` at `at` (ASCII in a loop, as subjects are; anything else through Buffer.write): bytes written. */
function writeText(buffer: Buffer, text: string, at: number): number {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code > 0x7f) return buffer.write(text, at, 'utf8');
    buffer[at + index] = code;
  }
  return text.length;
}

/** Whether `bytes[at..]` holds `text` in UTF-8 (an ASCII text compared in a loop). */
function holdsText(bytes: Uint8Array, at: number, length: number, text: string): boolean {
  if (length === text.length) {
    let index = 0;
    for (; index < length; index++) {
      const code = text.charCodeAt(index);
      if (code > 0x7f || bytes[at + index] !== code) break;
    }
    if (index === length) return true;
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset + at, length).equals(Buffer.from(text, 'utf8'));
}

/** `length` bytes at `at` as a string of their char codes (boot ids are ASCII; anything else never matches one). */
function asciiOf(bytes: Uint8Array, at: number, length: number): string {
  let text = '';
  for (let index = 0; index < length; index++) text += String.fromCharCode(bytes[at + index]);
  return text;
}

function sameBytes(a: Uint8Array, aAt: number, b: Uint8Array, bAt: number, length: number): boolean {
  for (let index = 0; index < length; index++) if (a[aAt + index] !== b[bAt + index]) return false;
  return true;
}

/**
 * The plaintext of one seal, built in a buffer reused from call to call: the cipher reads it inside update() and
 * keeps nothing, so no allocation per message beyond the sealed output.
 */
class PlaintextScratch {
  private buffer = Buffer.allocUnsafe(4096);

  /** sender length · sender · sent at · boot length · boot · context length · context · data, valid until the next call. */
  of(sender: Uint8Array, sentAtMs: number, boot: string, context: string, data: SealPayload): Buffer {
    // A string is written as UTF-8: at most 3 bytes per UTF-16 unit.
    const dataMost = typeof data === 'string' ? data.length * 3 : data.length;
    const most =
      1 +
      sender.length +
      TIME_BYTES +
      BOOT_LENGTH_BYTES +
      boot.length * 3 +
      CONTEXT_LENGTH_BYTES +
      context.length * 3 +
      dataMost;
    if (most > this.buffer.length) this.buffer = Buffer.allocUnsafe(Math.max(most, this.buffer.length * 2));
    const buffer = this.buffer;
    buffer[0] = sender.length;
    buffer.set(sender, 1);
    let at = 1 + sender.length;
    // 8 bytes big endian as two words (no BigInt): ms since the epoch stay below 2^53.
    buffer.writeUInt32BE(Math.floor(sentAtMs / WORD), at);
    buffer.writeUInt32BE(sentAtMs % WORD, at + 4);
    at += TIME_BYTES;
    const bootLength = writeText(buffer, boot, at + BOOT_LENGTH_BYTES);
    if (bootLength > MAX_BOOT_BYTES) throw new RangeError(`a boot id is at most ${MAX_BOOT_BYTES} bytes`);
    buffer[at] = bootLength;
    at += BOOT_LENGTH_BYTES + bootLength;
    const contextLength = writeText(buffer, context, at + CONTEXT_LENGTH_BYTES);
    if (contextLength > MAX_CONTEXT_BYTES) throw new RangeError('a seal context is at most 65535 bytes');
    buffer.writeUInt16BE(contextLength, at);
    at += CONTEXT_LENGTH_BYTES + contextLength;
    if (typeof data === 'string') return buffer.subarray(0, at + buffer.write(data, at, 'utf8'));
    buffer.set(data, at);
    return buffer.subarray(0, at + data.length);
  }
}

/** Sender ids decoded from their bytes, the last few kept (an edge hears from a handful of peers). */
class SenderNames {
  private readonly known: { bytes: Uint8Array; name: string }[] = [];

  /** The sender's name, or undefined when the bytes are not UTF-8. */
  of(bytes: Uint8Array, at: number, length: number): string | undefined {
    for (const entry of this.known) {
      if (entry.bytes.length === length && sameBytes(entry.bytes, 0, bytes, at, length)) return entry.name;
    }
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(at, at + length));
    } catch {
      return undefined;
    }
    if (this.known.length >= 16) this.known.pop();
    this.known.unshift({ bytes: Uint8Array.prototype.slice.call(bytes, at, at + length), name });
    return name;
  }
}

/** One sender's nonces within the window, oldest first, with the floor below which nothing is accepted. */
class SenderNonces {
  private readonly seen = new Map<string, number>();
  /** Messages sent at or before this time are refused (their nonces may have been forgotten). */
  private floor = -Infinity;

  constructor(private readonly capacity: number) {}

  /** Records the nonce; false when it was seen (or cannot be told apart from one forgotten). */
  admit(nonce: string, sentAtMs: number, oldestAcceptedMs: number): boolean {
    if (sentAtMs <= this.floor || this.seen.has(nonce)) return false;
    // Insertion order is close to time order: drop what left the window from the front.
    for (const [oldNonce, at] of this.seen) {
      if (at >= oldestAcceptedMs) break;
      this.seen.delete(oldNonce);
    }
    while (this.seen.size >= this.capacity) {
      const [oldNonce, at] = this.seen.entries().next().value as [string, number];
      this.seen.delete(oldNonce);
      if (at > this.floor) this.floor = at;
    }
    if (sentAtMs <= this.floor) return false;
    this.seen.set(nonce, sentAtMs);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}

export class FabricSealer {
  private readonly keyring: FabricKeyring;
  private readonly senderBytes: Uint8Array;
  private prefix: { key: FabricKey; bytes: Buffer } | undefined;
  private readonly now: () => number;
  readonly maxSkewMs: number;
  /** Messages stamped before this are refused: their nonces may have been seen by this edge's earlier life. */
  private readonly startedAtMs: number;
  private readonly replayCachePerSender: number;
  private readonly nonces = new Map<string, SenderNonces>();
  private readonly nonceSequence = new NonceSequence();
  private readonly plaintext = new PlaintextScratch();
  private readonly senderNames = new SenderNames();
  private readonly defer: (work: () => void) => void;
  private warmScheduled = false;
  /** Ciphers made ahead for this sealer's next nonces, oldest first (each nonce drawn once, used once). */
  private readonly ready: { key: FabricKey; nonce: Buffer; cipher: CipherGCM }[] = [];
  /** Seals that found their cipher made ahead, and those (and every open) that made it in place. */
  readonly madeAhead = { seals: 0, opens: 0 };
  readonly madeInPlace = { seals: 0, opens: 0 };

  constructor(options: FabricSealerOptions) {
    this.keyring = options.keyring;
    this.senderBytes = encoder.encode(options.sender);
    if (this.senderBytes.length === 0 || this.senderBytes.length > 255) {
      throw new RangeError('a sender id is 1 to 255 bytes');
    }
    this.now = options.now;
    this.startedAtMs = this.now();
    this.maxSkewMs = options.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    this.replayCachePerSender = options.replayCachePerSender ?? DEFAULT_REPLAY_CACHE_PER_SENDER;
    this.defer = options.defer ?? ((work) => setImmediate(work).unref());
  }

  /**
   * Seals `data` for `context` (messageContext / kvContext) with the primary key and a nonce of this sealer's;
   * `boot`: the receiver's boot id, for a request bound to its incarnation ('' for none).
   */
  seal(context: string, data: SealPayload, boot = ''): Uint8Array {
    const key = this.keyring.primary;
    const { nonce: nonceBytes, cipher } = this.cipherFor(key);
    const prefix = this.prefixFor(key);
    const headerLength = prefix.length + NONCE_BYTES;
    const sentAtMs = Math.max(0, Math.floor(this.now()));
    const body = cipher.update(this.plaintext.of(this.senderBytes, sentAtMs, boot, context, data));
    // GCM is a stream mode: final() adds no bytes, it only computes the tag.
    const final = cipher.final();
    const out = Buffer.allocUnsafe(headerLength + body.length + final.length + TAG_BYTES);
    out.set(prefix, 0);
    out.set(nonceBytes, prefix.length);
    out.set(body, headerLength);
    let at = headerLength + body.length;
    if (final.length > 0) {
      out.set(final, at);
      at += final.length;
    }
    out.set(cipher.getAuthTag(), at);
    this.warmSoon();
    return out;
  }

  /** version · key id · sender length · sender: the same for every message sealed with `key`. */
  private prefixFor(key: FabricKey): Buffer {
    if (this.prefix?.key === key) return this.prefix.bytes;
    const bytes = Buffer.alloc(1 + KEY_ID_BYTES + 1 + this.senderBytes.length);
    bytes[0] = SEAL_VERSION;
    bytes.set(key.id, 1);
    bytes[1 + KEY_ID_BYTES] = this.senderBytes.length;
    bytes.set(this.senderBytes, 2 + KEY_ID_BYTES);
    this.prefix = { key, bytes };
    return bytes;
  }

  /** The nonce and cipher of the next seal: one made ahead for this key, else a new one. */
  private cipherFor(key: FabricKey): { nonce: Buffer; cipher: CipherGCM } {
    for (let next = this.ready.shift(); next; next = this.ready.shift()) {
      // Made for a key that is no longer the primary: dropped, its nonce never used.
      if (next.key !== key) continue;
      this.madeAhead.seals += 1;
      return next;
    }
    this.madeInPlace.seals += 1;
    const nonce = this.nonceSequence.next();
    return { nonce, cipher: createCipheriv('aes-256-gcm', key.secret, nonce) };
  }

  private warmSoon(): void {
    if (this.warmScheduled) return;
    this.warmScheduled = true;
    this.defer(() => this.warm());
  }

  /** Makes the ciphers the next seals need, while this edge's caches still hold the cipher code. */
  private warm(): void {
    this.warmScheduled = false;
    const key = this.keyring.primary;
    while (this.ready.length < READY_CIPHERS) {
      const nonce = this.nonceSequence.next();
      this.ready.push({ key, nonce, cipher: createCipheriv('aes-256-gcm', key.secret, nonce) });
    }
  }

  /** Opens a message (with its replay check): `context` is where it arrived. */
  open(context: string, sealed: Uint8Array): Opened {
    const opened = this.decrypt(context, sealed);
    if (!opened.ok) return opened;
    const now = this.now();
    if (Math.abs(now - opened.sentAtMs) > this.maxSkewMs) {
      return { ok: false, reason: 'stale', claimed: opened.sender };
    }
    if (opened.sentAtMs < this.startedAtMs) return { ok: false, reason: 'replay', claimed: opened.sender };
    let nonces = this.nonces.get(opened.sender);
    if (!nonces) {
      if (this.nonces.size >= MAX_SENDERS) {
        // Only authenticated senders get here; an overflow means many past edge ids: start over with the quiet.
        for (const [sender, cache] of this.nonces) if (cache.size === 0) this.nonces.delete(sender);
      }
      nonces = new SenderNonces(this.replayCachePerSender);
      this.nonces.set(opened.sender, nonces);
    }
    if (!nonces.admit(opened.nonce, opened.sentAtMs, now - this.maxSkewMs)) {
      return { ok: false, reason: 'replay', claimed: opened.sender };
    }
    return opened;
  }

  /** Opens a KV value sealed at most `maxAgeMs` (+ skew) ago; the caller keeps per-key order. */
  openValue(context: string, sealed: Uint8Array, maxAgeMs: number): Opened {
    const opened = this.decrypt(context, sealed);
    if (!opened.ok) return opened;
    const age = this.now() - opened.sentAtMs;
    if (age > maxAgeMs + this.maxSkewMs || age < -this.maxSkewMs) {
      return { ok: false, reason: 'stale', claimed: opened.sender };
    }
    return opened;
  }

  private decrypt(context: string, sealed: Uint8Array): Opened {
    const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    const fixed = 1 + KEY_ID_BYTES + 1;
    if (bytes.length < fixed || bytes[0] !== SEAL_VERSION)
      return { ok: false, reason: 'malformed', claimed: '' };
    const senderLength = bytes[fixed - 1];
    const headerLength = fixed + senderLength + NONCE_BYTES;
    const leastPlaintext = 1 + senderLength + TIME_BYTES + BOOT_LENGTH_BYTES + CONTEXT_LENGTH_BYTES;
    if (senderLength === 0 || bytes.length < headerLength + leastPlaintext + TAG_BYTES) {
      return { ok: false, reason: 'malformed', claimed: '' };
    }
    const sender = this.senderNames.of(bytes, fixed, senderLength);
    if (sender === undefined) return { ok: false, reason: 'malformed', claimed: '' };
    const key = this.keyring.find(bytes.subarray(1, 1 + KEY_ID_BYTES));
    if (!key) return { ok: false, reason: 'unknown_key', claimed: sender };
    const nonceAt = fixed + senderLength;
    const nonce = nonceKey(bytes, nonceAt);
    this.madeInPlace.opens += 1;
    const decipher = createDecipheriv('aes-256-gcm', key.secret, bytes.subarray(nonceAt, headerLength));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = decipher.update(bytes.subarray(headerLength, bytes.length - TAG_BYTES));
      // final() checks the tag (throws on a forgery) and, GCM being a stream mode, adds no bytes.
      const final = decipher.final();
      if (final.length > 0) plain = Buffer.concat([plain, final]);
    } catch {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    // Authentic: what it says inside must be the sender in clear and the context it arrived on.
    if (plain[0] !== senderLength || !sameBytes(plain, 1, bytes, fixed, senderLength)) {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    let at = 1 + senderLength;
    const sentAtMs = plain.readUInt32BE(at) * WORD + plain.readUInt32BE(at + 4);
    at += TIME_BYTES;
    const bootLength = plain[at];
    at += BOOT_LENGTH_BYTES;
    if (bootLength > MAX_BOOT_BYTES || at + bootLength + CONTEXT_LENGTH_BYTES > plain.length) {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    const boot = bootLength === 0 ? '' : asciiOf(plain, at, bootLength);
    at += bootLength;
    const contextLength = plain.readUInt16BE(at);
    at += CONTEXT_LENGTH_BYTES;
    if (at + contextLength > plain.length || !holdsText(plain, at, contextLength, context)) {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    return { ok: true, sender, sentAtMs, nonce, boot, data: plain.subarray(at + contextLength) };
  }
}
