// Seals and opens what the edges of a fabric exchange over NATS: AES-256-GCM with the fabric key, bound to where
// the message goes, stamped with the sender's edge id, a time and a random nonce.
//
//   sealed    = version(1) · key id(4) · sender length(1) · sender(utf-8) · nonce(12) · ciphertext · tag(16)
//   plaintext = sender length(1) · sender · sent at ms(8, big endian) · context length(2) · context · data
//   context: `msg <subject> <reply subject>` for a message (reply '' when none), `kv <bucket> <key>` for a KV value
//
// No additional authenticated data: what the receiver must trust (sender, time, context) is inside the
// ciphertext, and the header's key id and nonce are bound by the key and the IV. The sender is also in clear, to
// name the claimed source of what does not open; it must equal the sealed one. One OpenSSL call fewer per seal
// and per open (setAAD), which on a loaded host costs as much as the encryption (bench/README.md).
//
// A message opens only with a key of the ring, unchanged, on the subject (and reply subject) it was sealed for,
// within `maxSkewMs` of this edge's clock, not stamped before this edge started, and once: each sender's nonces
// are remembered until their time leaves the window (bounded per sender; when a sender's cache is full the oldest
// are forgotten and every message sent no later than the newest forgotten one is refused, so a replay never
// passes). A restarted edge holds no nonces of its earlier life, so what was sent before it started is refused
// (a peer whose clock is behind loses its messages for that long after a restart). KV values carry no replay
// cache (they are read again by design); they must be younger than the bucket's TTL and never older than the last
// value accepted for the same key (SealedKv in fabric-bus.ts).
//
// Off a run's path: creating an OpenSSL cipher is most of a seal's cost, and on a loaded host, where each edge
// runs a few times per request with cold caches, it costs 60-80 µs (against 5 µs in a loop). So the sealer
// makes ciphers ahead, in the turn after it used one (`defer`):
//   - a few for random nonces, which the next seals take;
//   - nonces to offer a peer, each with its decipher (`offerNonces`): a requester sends them with a forwarded
//     run, and the owner seals its first answers with them (`acceptNonces`, each once), so the requester opens
//     those answers with a decipher made before the run was sent.
// The work left on a message's path is pure JavaScript but for update, final and the tag (nonce keys, sender
// names and context checks avoid Buffer's C++ helpers).
// An offered nonce comes from the same pool as this edge's own (random, never used twice); an accepted one is
// used for one seal and only if it was never accepted before (a message is opened once, and never one sent
// before this edge started, so a replay cannot make an edge seal twice with one nonce).
import {
  createCipheriv,
  createDecipheriv,
  randomFillSync,
  type CipherGCM,
  type DecipherGCM,
} from 'node:crypto';
import { KEY_ID_BYTES, type FabricKey, type FabricKeyring } from './fabric-keyring.js';

export const SEAL_VERSION = 2;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const TIME_BYTES = 8;
const CONTEXT_LENGTH_BYTES = 2;
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

/** Ciphers for random nonces kept ready (a burst larger than this makes the rest in place). */
const READY_CIPHERS = 4;
/** Nonces kept ready to offer, their deciphers made (a forward offers 3, a reply 1). */
const READY_OFFERS = 4;
/** Nonces this edge offered and still holds a decipher for (the oldest are dropped beyond it). */
const MAX_OFFERED = 2048;
/** Nonces a peer may offer with one message. */
export const MAX_NONCES_PER_OFFER = 4;
/** What is sealed: bytes, or a text sealed as its UTF-8 bytes (written straight into the plaintext, no copy). */
export type SealPayload = Uint8Array | string;

/** A nonce offered in one message, as it travels (base64 of 12 bytes). */
const NONCE_PATTERN = /^[A-Za-z0-9+/]{16}$/;

/** A nonce a peer offered for one seal of this edge (`FabricSealer.acceptNonces`); used at most once. */
export class SealNonce {
  /** Made ahead for `key`; undefined until then, or once used. */
  cipher: { key: FabricKey; cipher: CipherGCM } | undefined;
  used = false;
  constructor(readonly nonce: Buffer) {}
}

interface OfferedNonce {
  key: FabricKey;
  decipher: DecipherGCM | undefined;
  offeredAtMs: number;
}

export function messageContext(subject: string, reply: string | undefined): string {
  return `msg ${subject} ${reply ?? ''}`;
}

export function kvContext(bucket: string, key: string): string {
  return `kv ${bucket} ${key}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Random nonces drawn in batches (one system call per 256 messages instead of one per message). */
class NoncePool {
  private readonly pool = Buffer.allocUnsafe(NONCE_BYTES * 256);
  private offset = this.pool.length;

  /** A fresh nonce of its own (the pool's bytes are drawn again later). */
  next(): Buffer {
    if (this.offset >= this.pool.length) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const nonce = Buffer.from(this.pool.subarray(this.offset, this.offset + NONCE_BYTES));
    this.offset += NONCE_BYTES;
    return nonce;
  }
}

/** A nonce's 12 bytes as a 6-character string: the key of the replay cache and of offered nonces (no C++ call). */
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

  /** sender length · sender · sent at · context length · context · data, valid until the next call. */
  of(sender: Uint8Array, sentAtMs: number, context: string, data: SealPayload): Buffer {
    // A string is written as UTF-8: at most 3 bytes per UTF-16 unit.
    const dataMost = typeof data === 'string' ? data.length * 3 : data.length;
    const most = 1 + sender.length + TIME_BYTES + CONTEXT_LENGTH_BYTES + context.length * 3 + dataMost;
    if (most > this.buffer.length) this.buffer = Buffer.allocUnsafe(Math.max(most, this.buffer.length * 2));
    const buffer = this.buffer;
    buffer[0] = sender.length;
    buffer.set(sender, 1);
    let at = 1 + sender.length;
    // 8 bytes big endian as two words (no BigInt): ms since the epoch stay below 2^53.
    buffer.writeUInt32BE(Math.floor(sentAtMs / WORD), at);
    buffer.writeUInt32BE(sentAtMs % WORD, at + 4);
    at += TIME_BYTES;
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
  private readonly noncePool = new NoncePool();
  private readonly plaintext = new PlaintextScratch();
  private readonly senderNames = new SenderNames();
  private readonly defer: (work: () => void) => void;
  private warmScheduled = false;
  /** Ciphers made ahead for random nonces, oldest first. */
  private readonly ready: { key: FabricKey; nonce: Buffer; cipher: CipherGCM }[] = [];
  /** Nonces offered to peers (by nonceKey), in offer order, with their deciphers once made. */
  private readonly offered = new Map<string, OfferedNonce>();
  /** Nonces ready to offer, each with its decipher made. */
  private readonly readyOffers: { key: FabricKey; nonce: Buffer; wire: string; decipher: DecipherGCM }[] = [];
  /** Offered nonces whose deciphers are still to be made. */
  private unmade: { key: string; nonce: Buffer }[] = [];
  /** Offered nonces (as they travel) no answer will use: dropped in the next warm pass. */
  private withdrawn: string[] = [];
  /** Accepted nonces still to get a cipher made ahead. */
  private unprepared: SealNonce[] = [];
  /** Every nonce a peer offered within the window: one offered twice is not used again. */
  private readonly accepted: SenderNonces;
  /** Seals and opens that found their cipher made ahead, and those that made it in place. */
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
    this.accepted = new SenderNonces(this.replayCachePerSender);
    this.defer = options.defer ?? ((work) => setImmediate(work).unref());
  }

  /** Seals `data` for `context` (messageContext / kvContext) with the primary key; `nonce`: one a peer offered. */
  seal(context: string, data: SealPayload, nonce?: SealNonce): Uint8Array {
    const key = this.keyring.primary;
    const { nonce: nonceBytes, cipher } = this.cipherFor(key, nonce);
    const prefix = this.prefixFor(key);
    const headerLength = prefix.length + NONCE_BYTES;
    const sentAtMs = Math.max(0, Math.floor(this.now()));
    const body = cipher.update(this.plaintext.of(this.senderBytes, sentAtMs, context, data));
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

  /**
   * `count` nonces for a peer to seal its answers with (sent inside a sealed message); their deciphers were made
   * ahead (or are, in the next turn). `withdrawNonces` drops those no answer used.
   */
  offerNonces(count: number): string[] {
    const key = this.keyring.primary;
    const offeredAtMs = this.now();
    const nonces: string[] = [];
    for (let index = 0; index < Math.min(count, MAX_NONCES_PER_OFFER); index++) {
      let next = this.readyOffers.shift();
      while (next && next.key !== key) next = this.readyOffers.shift();
      const nonce = next?.nonce ?? this.noncePool.next();
      const lookup = nonceKey(nonce, 0);
      if (this.offered.size >= MAX_OFFERED) this.offered.delete(this.offered.keys().next().value as string);
      this.offered.set(lookup, { key, decipher: next?.decipher, offeredAtMs });
      if (!next) this.unmade.push({ key: lookup, nonce });
      nonces.push(next?.wire ?? nonce.toString('base64'));
    }
    this.warmSoon();
    return nonces;
  }

  /** Offered nonces no answer will use (as offerNonces gave them): their deciphers are dropped soon. */
  withdrawNonces(nonces: readonly string[]): void {
    this.withdrawn.push(...nonces);
    this.warmSoon();
  }

  /**
   * The nonces a peer offered in a message that opened (anything else yields none): one seal each, in order;
   * their ciphers are made in the next turn.
   */
  acceptNonces(offer: unknown): SealNonce[] {
    if (!Array.isArray(offer)) return [];
    const now = this.now();
    const accepted: SealNonce[] = [];
    for (const nonce of offer.slice(0, MAX_NONCES_PER_OFFER)) {
      // The order says what each is for: after a bad one, none.
      if (typeof nonce !== 'string' || !NONCE_PATTERN.test(nonce)) break;
      if (!this.accepted.admit(nonce, now, now - 2 * this.maxSkewMs)) break;
      accepted.push(new SealNonce(Buffer.from(nonce, 'base64')));
    }
    this.unprepared.push(...accepted);
    this.warmSoon();
    return accepted;
  }

  /** The nonce and cipher of the next seal: the offered one if unused, else one made ahead, else a new one. */
  private cipherFor(key: FabricKey, offered: SealNonce | undefined): { nonce: Buffer; cipher: CipherGCM } {
    if (offered && !offered.used) {
      offered.used = true;
      const prepared = offered.cipher;
      offered.cipher = undefined;
      if (prepared?.key === key) {
        this.madeAhead.seals += 1;
        return { nonce: offered.nonce, cipher: prepared.cipher };
      }
      this.madeInPlace.seals += 1;
      return { nonce: offered.nonce, cipher: createCipheriv('aes-256-gcm', key.secret, offered.nonce) };
    }
    for (let next = this.ready.shift(); next; next = this.ready.shift()) {
      // Made for a key that is no longer the primary: dropped, its nonce never used.
      if (next.key !== key) continue;
      this.madeAhead.seals += 1;
      return next;
    }
    this.madeInPlace.seals += 1;
    const nonce = this.noncePool.next();
    return { nonce, cipher: createCipheriv('aes-256-gcm', key.secret, nonce) };
  }

  private warmSoon(): void {
    if (this.warmScheduled) return;
    this.warmScheduled = true;
    this.defer(() => this.warm());
  }

  /** Makes what the next seals and opens need, while this edge's caches still hold the cipher code. */
  private warm(): void {
    this.warmScheduled = false;
    const key = this.keyring.primary;
    while (this.ready.length < READY_CIPHERS) {
      const nonce = this.noncePool.next();
      this.ready.push({ key, nonce, cipher: createCipheriv('aes-256-gcm', key.secret, nonce) });
    }
    // Offers are made only by an edge that forwards or answers forwards: none ready until the first one.
    if (this.offered.size > 0 || this.readyOffers.length > 0) {
      while (this.readyOffers.length < READY_OFFERS) {
        const nonce = this.noncePool.next();
        const decipher = createDecipheriv('aes-256-gcm', key.secret, nonce);
        this.readyOffers.push({ key, nonce, wire: nonce.toString('base64'), decipher });
      }
    }
    const withdrawn = this.withdrawn;
    this.withdrawn = [];
    for (const wire of withdrawn) this.offered.delete(nonceKey(Buffer.from(wire, 'base64'), 0));
    const unprepared = this.unprepared;
    this.unprepared = [];
    for (const accepted of unprepared) {
      if (accepted.used) continue;
      accepted.cipher = { key, cipher: createCipheriv('aes-256-gcm', key.secret, accepted.nonce) };
    }
    // Offered in time order: what no answer used within two skew windows is dropped from the front.
    const oldest = this.now() - 2 * this.maxSkewMs;
    for (const [nonce, offered] of this.offered) {
      if (offered.offeredAtMs >= oldest) break;
      this.offered.delete(nonce);
    }
    const unmade = this.unmade;
    this.unmade = [];
    for (const { key: lookup, nonce } of unmade) {
      const offered = this.offered.get(lookup);
      if (offered && !offered.decipher) {
        offered.decipher = createDecipheriv('aes-256-gcm', offered.key.secret, nonce);
      }
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
    const leastPlaintext = 1 + senderLength + TIME_BYTES + CONTEXT_LENGTH_BYTES;
    if (senderLength === 0 || bytes.length < headerLength + leastPlaintext + TAG_BYTES) {
      return { ok: false, reason: 'malformed', claimed: '' };
    }
    const sender = this.senderNames.of(bytes, fixed, senderLength);
    if (sender === undefined) return { ok: false, reason: 'malformed', claimed: '' };
    const key = this.keyring.find(bytes.subarray(1, 1 + KEY_ID_BYTES));
    if (!key) return { ok: false, reason: 'unknown_key', claimed: sender };
    const nonceAt = fixed + senderLength;
    const nonce = nonceKey(bytes, nonceAt);
    let decipher = this.decipherFor(key, nonce);
    if (decipher) this.madeAhead.opens += 1;
    else {
      this.madeInPlace.opens += 1;
      decipher = createDecipheriv('aes-256-gcm', key.secret, bytes.subarray(nonceAt, headerLength));
    }
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
    const contextLength = plain.readUInt16BE(at);
    at += CONTEXT_LENGTH_BYTES;
    if (at + contextLength > plain.length || !holdsText(plain, at, contextLength, context)) {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    return { ok: true, sender, sentAtMs, nonce, data: plain.subarray(at + contextLength) };
  }

  /** The decipher made ahead for a nonce this edge offered (taken once, whatever the message turns out to be). */
  private decipherFor(key: FabricKey, nonce: string): DecipherGCM | undefined {
    if (this.offered.size === 0) return undefined;
    const offered = this.offered.get(nonce);
    if (!offered) return undefined;
    this.offered.delete(nonce);
    return offered.key === key ? offered.decipher : undefined;
  }
}
