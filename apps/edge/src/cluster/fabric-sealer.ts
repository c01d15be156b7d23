// Seals and opens what the edges of a fabric exchange over NATS: AES-256-GCM with the fabric key, bound to where
// the message goes, stamped with the sender's edge id, a time and a random nonce.
//
//   sealed = version(1) · key id(4) · sender length(1) · sender(utf-8) · sent at ms(8, big endian) · nonce(12)
//            · ciphertext · tag(16)
//   AAD    = everything before the ciphertext · 0x00 · context
//   context: `msg <subject> <reply subject>` for a message (reply '' when none), `kv <bucket> <key>` for a KV value
//
// A message opens only with a key of the ring, unchanged, on the subject (and reply subject) it was sealed for,
// within `maxSkewMs` of this edge's clock, and once: each sender's nonces are remembered until their time leaves
// the window (bounded per sender; when a sender's cache is full the oldest are forgotten and every message sent
// no later than the newest forgotten one is refused, so a replay never passes). KV values carry no replay cache
// (they are read again by design); they must be younger than the bucket's TTL and never older than the last
// value accepted for the same key (SealedKv in fabric-bus.ts).
import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import { KEY_ID_BYTES, type FabricKeyring } from './fabric-keyring.js';

export const SEAL_VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const TIME_BYTES = 8;
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
  | { ok: true; sender: string; sentAtMs: number; nonce: string; data: Uint8Array }
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

  next(): Buffer {
    if (this.offset >= this.pool.length) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const nonce = this.pool.subarray(this.offset, this.offset + NONCE_BYTES);
    this.offset += NONCE_BYTES;
    return nonce;
  }
}

/**
 * The AAD of one seal or open, built in a buffer reused from call to call: the cipher reads it inside setAAD and
 * keeps nothing, so no Buffer.concat (three allocations and a copy) per message.
 */
class AadScratch {
  private buffer = Buffer.allocUnsafe(512);

  /** header · 0x00 · context, valid until the next call. */
  of(header: Uint8Array, context: string): Buffer {
    const length = header.length + 1 + Buffer.byteLength(context, 'utf8');
    if (length > this.buffer.length)
      this.buffer = Buffer.allocUnsafe(Math.max(length, this.buffer.length * 2));
    this.buffer.set(header, 0);
    this.buffer[header.length] = 0;
    this.buffer.write(context, header.length + 1, 'utf8');
    return this.buffer.subarray(0, length);
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
  private readonly now: () => number;
  readonly maxSkewMs: number;
  private readonly replayCachePerSender: number;
  private readonly nonces = new Map<string, SenderNonces>();
  private readonly noncePool = new NoncePool();
  private readonly aad = new AadScratch();

  constructor(options: FabricSealerOptions) {
    this.keyring = options.keyring;
    this.senderBytes = encoder.encode(options.sender);
    if (this.senderBytes.length === 0 || this.senderBytes.length > 255) {
      throw new RangeError('a sender id is 1 to 255 bytes');
    }
    this.now = options.now;
    this.maxSkewMs = options.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    this.replayCachePerSender = options.replayCachePerSender ?? DEFAULT_REPLAY_CACHE_PER_SENDER;
  }

  /** Seals `data` for `context` (messageContext / kvContext) with the primary key. */
  seal(context: string, data: Uint8Array): Uint8Array {
    const key = this.keyring.primary;
    const headerLength = 1 + KEY_ID_BYTES + 1 + this.senderBytes.length + TIME_BYTES + NONCE_BYTES;
    const out = Buffer.allocUnsafe(headerLength + data.length + TAG_BYTES);
    let at = 0;
    out[at++] = SEAL_VERSION;
    out.set(key.id, at);
    at += KEY_ID_BYTES;
    out[at++] = this.senderBytes.length;
    out.set(this.senderBytes, at);
    at += this.senderBytes.length;
    out.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(this.now()))), at);
    at += TIME_BYTES;
    // Each nonce is used once: it is copied into the message before the pool moves on.
    const nonce = this.noncePool.next();
    out.set(nonce, at);
    at += NONCE_BYTES;
    const cipher = createCipheriv('aes-256-gcm', key.secret, nonce);
    cipher.setAAD(this.aad.of(out.subarray(0, headerLength), context));
    const body = cipher.update(data);
    body.copy(out, at);
    at += body.length;
    // GCM is a stream mode: final() adds no bytes, it only computes the tag.
    const final = cipher.final();
    if (final.length > 0) {
      final.copy(out, at);
      at += final.length;
    }
    cipher.getAuthTag().copy(out, at);
    return out;
  }

  /** Opens a message (with its replay check): `context` is where it arrived. */
  open(context: string, sealed: Uint8Array): Opened {
    const opened = this.decrypt(context, sealed);
    if (!opened.ok) return opened;
    const now = this.now();
    if (Math.abs(now - opened.sentAtMs) > this.maxSkewMs) {
      return { ok: false, reason: 'stale', claimed: opened.sender };
    }
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
    const headerLength = fixed + senderLength + TIME_BYTES + NONCE_BYTES;
    if (senderLength === 0 || bytes.length < headerLength + TAG_BYTES) {
      return { ok: false, reason: 'malformed', claimed: '' };
    }
    let sender: string;
    try {
      sender = decoder.decode(bytes.subarray(fixed, fixed + senderLength));
    } catch {
      return { ok: false, reason: 'malformed', claimed: '' };
    }
    const key = this.keyring.find(bytes.subarray(1, 1 + KEY_ID_BYTES));
    if (!key) return { ok: false, reason: 'unknown_key', claimed: sender };
    const timeAt = fixed + senderLength;
    const sentAtMs = Number(bytes.readBigUInt64BE(timeAt));
    const nonceBytes = bytes.subarray(timeAt + TIME_BYTES, headerLength);
    const decipher = createDecipheriv('aes-256-gcm', key.secret, nonceBytes);
    decipher.setAAD(this.aad.of(bytes.subarray(0, headerLength), context));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    let data: Buffer;
    try {
      data = decipher.update(bytes.subarray(headerLength, bytes.length - TAG_BYTES));
      // final() checks the tag (throws on a forgery) and, GCM being a stream mode, adds no bytes.
      const final = decipher.final();
      if (final.length > 0) data = Buffer.concat([data, final]);
    } catch {
      return { ok: false, reason: 'auth_failed', claimed: sender };
    }
    return { ok: true, sender, sentAtMs, nonce: nonceBytes.toString('base64'), data };
  }
}
