// The fabric's connection: what the cluster files use instead of the raw NATS connection and KV buckets. It has
// their shapes (publish / subscribe / request / respond; KV put, get, create, update, delete, watch), and it seals
// everything that leaves with the fabric key and opens everything that arrives (fabric-sealer.ts). What does not
// open is dropped before any cluster code sees it: counted by reason (iop_cluster_rejected_total) and logged once
// per claimed source per minute.
//
// Requests use one inbox subscription per connection (`<inbox>.<token>`), so the reply subject a request names is
// known before it is sealed and the reply is bound to it.
//
// Every message sent to another edge (`to`) is bound to that edge's incarnation: it carries, inside the
// ciphertext, the boot id the receiver published in its sealed state (`peerBoot`); a subscription made `bound`
// takes only messages naming this edge's own boot id, so a request recorded before a restart is dropped as a
// replay, whatever its time. Nothing is sent to an edge whose boot id is not known (FabricBusError
// `unknown_peer`). The server's "no responders" status is not authenticated (any NATS client can send one on a
// reply subject), so it is ignored: a request waits for a sealed answer until its timeout, or until the sealed
// membership view says the edge is gone (`peerGone`). KV deletes are written as a sealed empty value (a
// tombstone) and surface as `DEL`; a NATS delete or purge carries nothing to authenticate, so the watch ignores
// it (the entry expires with the bucket's TTL).
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { KV, KvWatchOptions } from '@nats-io/kv';
import { typedError, type FaultTable } from '@iop/errors';
import type { Clock, ClockTimer } from '../clock.js';
import type { Logger } from '../logging.js';
import type { FabricSealer, SealPayload } from './fabric-sealer.js';
import { kvContext, messageContext, type Opened, type RejectReason } from './fabric-sealer.js';

export type FabricBusErrorCode =
  /** No sealed answer within the request's timeout. */
  | 'timeout'
  /** The connection is closed. */
  | 'closed'
  /** The sealed membership view says the edge left (or went silent) before it answered. */
  | 'gone'
  /** The edge's boot id is not known (not in the sealed membership view): nothing was sent. */
  | 'unknown_peer';

/** Transient all: the other edge may be gone or busy. */
const FABRIC_BUS_FAULT: FaultTable<FabricBusErrorCode> = {
  timeout: 'transient',
  closed: 'transient',
  gone: 'transient',
  unknown_peer: 'transient',
};

/** A request that got no sealed answer. */
export class FabricBusError extends typedError('FabricBusError', FABRIC_BUS_FAULT) {}

/** A message that opened: its payload is the sender's plaintext. */
export interface FabricMsg {
  readonly subject: string;
  readonly reply: string | undefined;
  readonly data: Uint8Array;
  /** The edge that sealed it (authenticated by the fabric key). */
  readonly sender: string;
  /** Seals `data` for the reply subject and sends it there; false when the message named none. */
  respond(data: SealPayload): boolean;
}

export interface FabricSubscribeOptions {
  /** Only messages that opened reach it. */
  callback(error: null, msg: FabricMsg): void;
  /**
   * Only messages sealed for this edge's current boot id (requests to this edge): any other is dropped and counted
   * as a replay.
   */
  bound?: boolean;
}

export interface FabricSubscription {
  unsubscribe(): void;
}

/** Where rejections go: a counter and a logger. */
export interface RejectionSink {
  rejected(reason: RejectReason): void;
}

export interface SealedKvEntry {
  readonly key: string;
  readonly revision: number;
  /** `DEL`: a sealed tombstone (an edge deleted its own value). */
  readonly operation: 'PUT' | 'DEL';
  readonly value: Uint8Array;
  /** The edge that sealed it. */
  readonly sender: string;
  json<T>(): T;
}

export interface SealedKvWatch extends AsyncIterable<SealedKvEntry> {
  stop(): void;
}

/** A KV bucket whose values are sealed for their bucket and key. */
export interface SealedKv {
  put(key: string, value: Uint8Array): Promise<number>;
  create(key: string, value: Uint8Array): Promise<number>;
  update(key: string, value: Uint8Array, revision: number): Promise<number>;
  /** The entry's revision and opened value (undefined when it did not open or is a tombstone). */
  get(key: string): Promise<{ revision: number; value: Uint8Array | undefined } | null>;
  /** Writes a sealed tombstone (with `previousSeq`: only over that revision). */
  delete(key: string, options?: { previousSeq?: number }): Promise<void>;
  watch(options?: Pick<KvWatchOptions, 'include' | 'key'>): Promise<SealedKvWatch>;
}

export interface FabricBus {
  readonly edgeId: string;
  /** This process's boot id (published in its sealed state; requests to it must name it). */
  readonly bootId: string;
  /**
   * A string is sent as its UTF-8 bytes. `to`: the edge it is for, bound to that edge's boot id (throws
   * FabricBusError `unknown_peer` when it is not known).
   */
  publish(subject: string, data: SealPayload, options?: { reply?: string; to?: string }): void;
  subscribe(subject: string, options: FabricSubscribeOptions): FabricSubscription;
  /**
   * The first sealed answer from edge `to` on this request's reply subject; FabricBusError when none comes in
   * time, when `to` is gone (`peerGone`) or unknown.
   */
  request(subject: string, data: Uint8Array, options: { timeout: number; to: string }): Promise<FabricMsg>;
  /** The sealed membership view says `edgeId` left: its pending requests fail now (`gone`). */
  peerGone(edgeId: string): void;
  /** A sealed view of a KV bucket whose entries live at most `ttlMs`. */
  kv(bucket: KV, name: string, ttlMs: number): SealedKv;
  flush(): Promise<void>;
  isClosed(): boolean;
  closed(): Promise<void | Error>;
  drain(): Promise<void>;
  close(): Promise<void>;
}

export interface FabricBusOptions {
  nc: NatsConnection;
  sealer: FabricSealer;
  edgeId: string;
  logger: Logger;
  sink?: RejectionSink;
  /** The log throttle's time and the requests' timeouts. */
  clock: Clock;
  /** This process's boot id: random, new at every start (at most 64 ASCII characters). */
  bootId: string;
  /** The boot id another edge published in its sealed state; undefined when it is not a live member. */
  peerBoot(edgeId: string): string | undefined;
}

/** Rejections are logged at most once per source per this long. */
const LOG_EVERY_MS = 60_000;
/** Sources remembered by the log throttle (a flood of made-up sender names cannot grow it). */
const MAX_LOG_SOURCES = 256;
/** KV keys whose last accepted time is remembered (edges and nodes of one fabric). */
const MAX_KV_KEYS = 16_384;

const EMPTY = new Uint8Array(0);

interface PendingRequest {
  /** The edge asked: only its answer counts. */
  to: string;
  resolve(msg: FabricMsg): void;
  reject(error: FabricBusError): void;
  timer: ClockTimer;
}

export function createFabricBus(options: FabricBusOptions): FabricBus {
  return new SealedBus(options);
}

class SealedBus implements FabricBus {
  readonly edgeId: string;
  readonly bootId: string;
  private readonly nc: NatsConnection;
  private readonly sealer: FabricSealer;
  private readonly logged = new Map<string, number>();
  private inbox: { prefix: string; subscription: Subscription } | undefined;
  private readonly pending = new Map<string, PendingRequest>();
  private sequence = 0;

  constructor(private readonly options: FabricBusOptions) {
    this.edgeId = options.edgeId;
    this.bootId = options.bootId;
    this.nc = options.nc;
    this.sealer = options.sealer;
  }

  /** Counts and (throttled) logs a dropped message. */
  reject(reason: RejectReason, claimed: string, where: string): void {
    this.options.sink?.rejected(reason);
    const source = claimed === '' ? '(unreadable)' : claimed;
    const now = this.options.clock.now();
    const last = this.logged.get(source);
    if (last !== undefined && now - last < LOG_EVERY_MS) return;
    if (last === undefined && this.logged.size >= MAX_LOG_SOURCES) {
      for (const [known, at] of this.logged) if (now - at >= LOG_EVERY_MS) this.logged.delete(known);
      if (this.logged.size >= MAX_LOG_SOURCES) return;
    }
    this.logged.set(source, now);
    this.options.logger.warn(
      { reason, source, where },
      'cluster: dropped a message the fabric key does not authenticate (logged once per source per minute)',
    );
  }

  private message(msg: Msg, opened: Extract<Opened, { ok: true }>): FabricMsg {
    const reply = msg.reply;
    return {
      subject: msg.subject,
      reply,
      data: opened.data,
      sender: opened.sender,
      respond: (data) => {
        if (!reply || this.nc.isClosed()) return false;
        this.nc.publish(reply, this.sealer.seal(messageContext(reply, undefined), data));
        return true;
      },
    };
  }

  private openMsg(msg: Msg): Extract<Opened, { ok: true }> | undefined {
    const opened = this.sealer.open(messageContext(msg.subject, msg.reply), msg.data);
    if (opened.ok) return opened;
    this.reject(opened.reason, opened.claimed, msg.subject);
    return undefined;
  }

  /** The boot id a message to `to` is bound to; throws when it is not known. */
  private bootOf(to: string): string {
    const boot = this.options.peerBoot(to);
    if (boot === undefined) {
      throw new FabricBusError('unknown_peer', `edge ${to} is not in the sealed membership view`);
    }
    return boot;
  }

  publish(subject: string, data: SealPayload, options?: { reply?: string; to?: string }): void {
    const reply = options?.reply;
    const boot = options?.to !== undefined ? this.bootOf(options.to) : '';
    this.nc.publish(
      subject,
      this.sealer.seal(messageContext(subject, reply), data, boot),
      reply !== undefined ? { reply } : undefined,
    );
  }

  subscribe(subject: string, options: FabricSubscribeOptions): FabricSubscription {
    return this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) {
          this.options.logger.warn({ subject, error: error.message }, 'cluster: subscription error');
          return;
        }
        // A "no responders" status (unauthenticated) only ever arrives on reply subjects; here it is dropped.
        if (isStatus(msg)) return;
        const opened = this.openMsg(msg);
        if (!opened) return;
        if (options.bound && opened.boot !== this.bootId) {
          // Sealed for an earlier life of this edge (a recording replayed after a restart), or by a peer that has
          // not yet seen this boot's state.
          this.reject('replay', opened.sender, msg.subject);
          return;
        }
        options.callback(null, this.message(msg, opened));
      },
    });
  }

  request(subject: string, data: Uint8Array, options: { timeout: number; to: string }): Promise<FabricMsg> {
    if (this.nc.isClosed())
      return Promise.reject(new FabricBusError('closed', 'the NATS connection is closed'));
    const inbox = this.ensureInbox();
    const token = (this.sequence += 1).toString(36);
    const reply = `${inbox.prefix}.${token}`;
    return new Promise<FabricMsg>((resolve, reject) => {
      const timer = this.options.clock.setTimeout(() => {
        this.pending.delete(token);
        reject(
          new FabricBusError(
            'timeout',
            `no answer from edge ${options.to} on ${subject} within ${options.timeout} ms`,
          ),
        );
      }, options.timeout);
      this.pending.set(token, { to: options.to, resolve, reject, timer });
      try {
        this.publish(subject, data, { reply, to: options.to });
      } catch (error) {
        this.settle(token);
        reject(
          error instanceof FabricBusError
            ? error
            : new FabricBusError('closed', error instanceof Error ? error.message : String(error)),
        );
      }
    });
  }

  peerGone(edgeId: string): void {
    for (const [token, pending] of [...this.pending]) {
      if (pending.to === edgeId) {
        this.settle(token)?.reject(
          new FabricBusError('gone', `edge ${edgeId} left the fabric before it answered`),
        );
      }
    }
  }

  private settle(token: string): PendingRequest | undefined {
    const pending = this.pending.get(token);
    if (!pending) return undefined;
    this.pending.delete(token);
    this.options.clock.clearTimeout(pending.timer);
    return pending;
  }

  private ensureInbox(): { prefix: string; subscription: Subscription } {
    if (this.inbox) return this.inbox;
    const prefix = createInbox();
    const subscription = this.nc.subscribe(`${prefix}.*`, {
      callback: (error, msg) => {
        if (error) return;
        const token = msg.subject.slice(prefix.length + 1);
        const pending = this.pending.get(token);
        // A "no responders" status is only a hint (anyone can send one): the request waits for a sealed answer.
        if (!pending || isStatus(msg)) return;
        // A reply that does not open, or comes from another edge than the one asked, is dropped; the request keeps
        // waiting for a real one.
        const opened = this.openMsg(msg);
        if (opened && opened.sender === pending.to) this.settle(token)?.resolve(this.message(msg, opened));
      },
    });
    this.inbox = { prefix, subscription };
    return this.inbox;
  }

  private rejectPending(): void {
    for (const token of [...this.pending.keys()]) {
      this.settle(token)?.reject(new FabricBusError('closed', 'the NATS connection closed'));
    }
  }

  kv(bucket: KV, name: string, ttlMs: number): SealedKv {
    return new SealedBucket(bucket, name, ttlMs, this.sealer, (reason, claimed, key) =>
      this.reject(reason, claimed, `kv ${name} ${key}`),
    );
  }

  flush(): Promise<void> {
    return this.nc.flush();
  }

  isClosed(): boolean {
    return this.nc.isClosed();
  }

  closed(): Promise<void | Error> {
    return this.nc.closed();
  }

  async drain(): Promise<void> {
    this.rejectPending();
    await this.nc.drain();
  }

  async close(): Promise<void> {
    this.rejectPending();
    await this.nc.close();
  }
}

/** A server status (e.g. 503 "no responders"): empty, with a status code; never sealed, never trusted. */
function isStatus(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code !== undefined && msg.headers.code !== 0;
}

class SealedBucket implements SealedKv {
  /** The time of the last value accepted per key: an older one is a replay. */
  private readonly accepted = new Map<string, { sentAtMs: number; nonce: string }>();

  constructor(
    private readonly bucket: KV,
    private readonly name: string,
    private readonly ttlMs: number,
    private readonly sealer: FabricSealer,
    private readonly onReject: (reason: RejectReason, claimed: string, key: string) => void,
  ) {}

  private seal(key: string, value: Uint8Array): Uint8Array {
    return this.sealer.seal(kvContext(this.name, key), value);
  }

  put(key: string, value: Uint8Array): Promise<number> {
    return this.bucket.put(key, this.seal(key, value));
  }

  create(key: string, value: Uint8Array): Promise<number> {
    return this.bucket.create(key, this.seal(key, value));
  }

  update(key: string, value: Uint8Array, revision: number): Promise<number> {
    return this.bucket.update(key, this.seal(key, value), revision);
  }

  async delete(key: string, options?: { previousSeq?: number }): Promise<void> {
    if (options?.previousSeq !== undefined) await this.update(key, EMPTY, options.previousSeq);
    else await this.put(key, EMPTY);
  }

  async get(key: string): Promise<{ revision: number; value: Uint8Array | undefined } | null> {
    const entry = await this.bucket.get(key);
    if (!entry) return null;
    if (entry.operation !== 'PUT') return { revision: entry.revision, value: undefined };
    const opened = this.sealer.openValue(kvContext(this.name, key), entry.value, this.ttlMs);
    if (!opened.ok) this.onReject(opened.reason, opened.claimed, key);
    return {
      revision: entry.revision,
      value: opened.ok && opened.data.length > 0 ? opened.data : undefined,
    };
  }

  /** The entry opened and in order for its key; undefined (counted) otherwise. */
  private open(
    key: string,
    operation: string,
    value: Uint8Array,
    revision: number,
  ): SealedKvEntry | undefined {
    if (operation !== 'PUT') {
      this.onReject('unsealed', '', key);
      return undefined;
    }
    const opened = this.sealer.openValue(kvContext(this.name, key), value, this.ttlMs);
    if (!opened.ok) {
      this.onReject(opened.reason, opened.claimed, key);
      return undefined;
    }
    const last = this.accepted.get(key);
    if (
      last !== undefined &&
      (opened.sentAtMs < last.sentAtMs || (opened.sentAtMs === last.sentAtMs && opened.nonce === last.nonce))
    ) {
      this.onReject('replay', opened.sender, key);
      return undefined;
    }
    this.accepted.delete(key);
    this.accepted.set(key, { sentAtMs: opened.sentAtMs, nonce: opened.nonce });
    if (this.accepted.size > MAX_KV_KEYS) this.accepted.delete(this.accepted.keys().next().value as string);
    const data = opened.data;
    return {
      key,
      revision,
      operation: data.length === 0 ? 'DEL' : 'PUT',
      value: data,
      sender: opened.sender,
      json: <T>() => JSON.parse(new TextDecoder().decode(data)) as T,
    };
  }

  async watch(options?: Pick<KvWatchOptions, 'include' | 'key'>): Promise<SealedKvWatch> {
    const inner = await this.bucket.watch(options);
    const open = (key: string, operation: string, value: Uint8Array, revision: number) =>
      this.open(key, operation, value, revision);
    return {
      stop: () => inner.stop(),
      async *[Symbol.asyncIterator]() {
        for await (const entry of inner) {
          const opened = open(entry.key, entry.operation, entry.value, entry.revision);
          if (opened) yield opened;
        }
      },
    };
  }
}
