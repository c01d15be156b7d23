// One edge⇄node link: envelopes out through a FIFO that honours socket backpressure, envelopes in as an async
// iterable with a bounded buffer (the socket is paused while the consumer lags), and one close path that every
// ending (local close, peer close or reset, bad input) goes through exactly once.
//
// Lifecycle: open → closing (close() called, bad input, or peer ended) → closed (socket 'close' event). `closed`
// resolves at the last step with the first recorded cause.
import { systemClock, type ClockTimer } from '@iop/clock';
import type net from 'node:net';
import type tls from 'node:tls';
import { envelope as build } from './envelope.js';
import { WireError } from './errors.js';
import { FrameDecoder } from './frame-decoder.js';
import { encodeFrame } from './frame-encoder.js';
import { checkMaxFrameBytes, DEFAULT_MAX_FRAME_BYTES } from './frame-limits.js';
import { CLOSE_REASONS } from './close-reasons.js';
import type { Envelope } from './messages.js';
import { silentWireLogger, type WireLogger } from './wire-logger.js';

export interface FramedConnectionOptions {
  /** Largest frame accepted and sent; default 16 MiB. */
  maxFrameBytes?: number;
  logger?: WireLogger;
  /**
   * Decoded payload bytes held for a consumer that has not read them yet. Above this the socket is paused;
   * reading resumes when the backlog falls to half. Default 4 MiB.
   */
  maxBufferedBytes?: number;
  /** Bound for each close step (flushing the Goodbye, waiting for the peer's FIN). Default 2000 ms. */
  closeTimeoutMs?: number;
  /**
   * Largest frame accepted from the peer until `setInputLimits` raises it (default maxFrameBytes). A listener
   * sets a small value so an unauthenticated peer cannot make it buffer a large frame.
   */
  maxIncomingFrameBytes?: number;
}

/** Limits of the incoming side that can change during a connection's life (e.g. after authentication). */
export interface InputLimits {
  maxFrameBytes?: number;
  maxBufferedBytes?: number;
}

export interface ConnectionClosed {
  /** The local close reason, the peer's Goodbye reason, 'peer-closed', or the error's code. */
  reason: string;
  /** Set when the connection ended because of a failure (bad input, reset). */
  error?: WireError;
  /** True when the peer (or the network) ended the connection, false when this side closed it. */
  byPeer: boolean;
}

export interface CloseOptions {
  /** Send a Goodbye frame with the reason before closing. */
  goodbye?: boolean;
  detail?: string;
}

interface QueuedEnvelope {
  envelope: Envelope;
  bytes: number;
}

interface PendingWrite {
  frame: Buffer;
  resolve: () => void;
  reject: (error: WireError) => void;
}

const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const DEFAULT_CLOSE_TIMEOUT_MS = 2000;
/** Most bytes of queued frames copied into one socket write (a larger frame is written on its own). */
const WRITE_BATCH_BYTES = 64 * 1024;

export class FramedConnection {
  readonly remoteAddress: string;
  /** Resolves once the socket is fully closed, with the first recorded cause. Never rejects. */
  readonly closed: Promise<ConnectionClosed>;

  readonly #socket: net.Socket | tls.TLSSocket;
  readonly #logger: WireLogger;
  readonly #maxFrameBytes: number;
  #maxBufferedBytes: number;
  readonly #closeTimeoutMs: number;
  readonly #decoder: FrameDecoder;
  readonly #resolveClosed: (value: ConnectionClosed) => void;

  // Incoming side.
  #queue: QueuedEnvelope[] = [];
  #queueHead = 0;
  #queuedBytes = 0;
  #pausedForBackpressure = false;
  /** No more envelopes will be queued (peer ended, local close, or failure). */
  #inputDone = false;
  #wakeConsumer: (() => void) | undefined;
  #consumerAttached = false;
  #peerGoodbye: { reason: string; detail: string } | undefined;

  // Outgoing side.
  #outgoing: PendingWrite[] = [];
  #outgoingHead = 0;
  #flushScheduled = false;
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    this.#pump();
  };
  /** The newest frame's write (writes complete in order: it settling means every earlier one has too). */
  #lastWrite: Promise<void> | undefined;

  // Closing.
  #closeInfo: ConnectionClosed | undefined;
  #closing: Promise<void> | undefined;
  #socketClosed = false;

  constructor(socket: net.Socket | tls.TLSSocket, options: FramedConnectionOptions = {}) {
    this.#socket = socket;
    this.#logger = options.logger ?? silentWireLogger;
    this.#maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
    this.#maxBufferedBytes = positiveInteger(
      'maxBufferedBytes',
      options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    );
    this.#closeTimeoutMs = positiveInteger(
      'closeTimeoutMs',
      options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS,
    );
    this.remoteAddress = formatAddress(socket.remoteAddress, socket.remotePort);
    this.#decoder = new FrameDecoder({
      maxFrameBytes: Math.min(
        this.#maxFrameBytes,
        checkMaxFrameBytes(options.maxIncomingFrameBytes ?? this.#maxFrameBytes),
      ),
      onUnknownKind: (info) =>
        this.#logger.warn(
          { remoteAddress: this.remoteAddress, ...info },
          'ignoring an envelope of an unknown message kind (newer peer?)',
        ),
    });
    let resolveClosed!: (value: ConnectionClosed) => void;
    this.closed = new Promise((resolve) => (resolveClosed = resolve));
    this.#resolveClosed = resolveClosed;

    // Small frames (one per streamed token) must not wait for Nagle's algorithm.
    if (typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('error', (error: Error) => this.#onError(error));
    socket.on('close', () => this.#onClose());
    socket.on('drain', () => this.#pump());
    if (socket.destroyed) queueMicrotask(() => this.#onClose());
  }

  /** Bytes received from the peer so far (0 for a peer that has been silent since it connected). */
  get bytesReceived(): number {
    return this.#socket.bytesRead;
  }

  /**
   * `length` bytes of TLS exported keying material for `label` (RFC 5705/8446; an empty context), the same on both ends of
   * one TLS session and unknown to anyone else: what binds a signature to this connection. Undefined on a
   * plaintext connection or once the socket is gone.
   */
  exportKeyingMaterial(length: number, label: string): Buffer | undefined {
    const socket = this.#socket as Partial<tls.TLSSocket> & net.Socket;
    if (socket.encrypted !== true || typeof socket.exportKeyingMaterial !== 'function' || socket.destroyed) {
      return undefined;
    }
    return socket.exportKeyingMaterial(length, label, Buffer.alloc(0));
  }

  /**
   * Changes the incoming limits: the largest frame (at most the construction-time maxFrameBytes; applies from the
   * next frame header) and the decoded bytes held for a lagging consumer.
   */
  setInputLimits(limits: InputLimits): void {
    if (limits.maxFrameBytes !== undefined) {
      this.#decoder.maxFrameBytes = Math.min(this.#maxFrameBytes, checkMaxFrameBytes(limits.maxFrameBytes));
    }
    if (limits.maxBufferedBytes !== undefined) {
      this.#maxBufferedBytes = positiveInteger('maxBufferedBytes', limits.maxBufferedBytes);
      if (this.#pausedForBackpressure && this.#queuedBytes <= this.#maxBufferedBytes / 2) {
        this.#pausedForBackpressure = false;
        if (!this.#inputDone) this.#socket.resume();
      }
    }
  }

  /**
   * Sends one envelope. Resolves when the frame was handed to the kernel; while the socket is congested, frames
   * wait in order (and their promises stay pending) until 'drain'. Rejects with WireError connection_closed,
   * write_failed, or frame_too_large (the connection stays open in that last case).
   */
  send(message: Envelope): Promise<void> {
    if (this.#closeInfo) return Promise.reject(this.#closedError());
    let frame: Buffer;
    try {
      frame = encodeFrame(message, this.#maxFrameBytes);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#enqueueWrite(frame);
  }

  /**
   * Incoming envelopes, in order. Single consumer. Ends when the peer closes or after close(); throws the
   * connection's WireError (after the socket is closed) when it ended through bad input or a reset. Envelopes
   * still buffered when close() is called are dropped.
   */
  messages(): AsyncIterable<Envelope> {
    if (this.#consumerAttached) throw new Error('FramedConnection.messages() supports a single consumer');
    this.#consumerAttached = true;
    return this.#iterate();
  }

  /**
   * Closes the connection: optionally sends a Goodbye (bounded by closeTimeoutMs), ends the socket, and destroys it
   * if the peer does not finish closing within closeTimeoutMs. Idempotent; resolves when the socket is closed.
   */
  close(reason: string, options: CloseOptions = {}): Promise<void> {
    this.#closing ??= this.#shutdown(
      { reason, byPeer: false },
      options.goodbye ? { reason, detail: options.detail ?? '' } : undefined,
    );
    return this.#closing;
  }

  async *#iterate(): AsyncGenerator<Envelope, void, undefined> {
    for (;;) {
      const next = this.#dequeue();
      if (next) {
        yield next;
        continue;
      }
      if (this.#inputDone) {
        const info = await this.closed;
        if (info.error) throw info.error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wakeConsumer = resolve));
    }
  }

  #dequeue(): Envelope | undefined {
    if (this.#queueHead >= this.#queue.length) return undefined;
    const item = this.#queue[this.#queueHead];
    this.#queue[this.#queueHead] = undefined as unknown as QueuedEnvelope;
    this.#queueHead += 1;
    if (this.#queueHead === this.#queue.length) {
      this.#queue = [];
      this.#queueHead = 0;
    } else if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
    this.#queuedBytes -= item.bytes;
    if (this.#pausedForBackpressure && this.#queuedBytes <= this.#maxBufferedBytes / 2) {
      this.#pausedForBackpressure = false;
      if (!this.#inputDone) this.#socket.resume();
    }
    return item.envelope;
  }

  #wake(): void {
    const wake = this.#wakeConsumer;
    this.#wakeConsumer = undefined;
    wake?.();
  }

  #onData(chunk: Buffer): void {
    if (this.#inputDone) return;
    try {
      this.#decoder.pushEach(chunk, (message, bytes) => {
        if (message.msg.$case === 'goodbye') {
          this.#peerGoodbye = { reason: message.msg.goodbye.reason, detail: message.msg.goodbye.detail };
          this.#logger.debug(
            { remoteAddress: this.remoteAddress, ...this.#peerGoodbye },
            'peer said goodbye',
          );
        }
        this.#queue.push({ envelope: message, bytes });
        this.#queuedBytes += bytes;
      });
    } catch (error) {
      this.#wake();
      this.#failInput(error instanceof WireError ? error : new WireError('malformed_frame', String(error)));
      return;
    }
    this.#wake();
    if (this.#queuedBytes > this.#maxBufferedBytes && !this.#pausedForBackpressure) {
      this.#pausedForBackpressure = true;
      this.#socket.pause();
    }
  }

  #onEnd(): void {
    if (this.#inputDone) return;
    try {
      this.#decoder.finish();
    } catch (error) {
      this.#failInput(error instanceof WireError ? error : new WireError('truncated_frame', String(error)));
      return;
    }
    this.#inputDone = true;
    this.#closeInfo ??= { reason: this.#peerGoodbye?.reason || CLOSE_REASONS.peerClosed, byPeer: true };
    this.#wake();
    // With allowHalfOpen the socket stays writable after the peer's FIN; this protocol has no use for that.
    if (!this.#socket.writableEnded) this.#socket.end();
    this.#armDestroyTimer();
  }

  #onError(error: Error): void {
    const code = (error as NodeJS.ErrnoException).code;
    this.#logger.debug({ remoteAddress: this.remoteAddress, code, error: error.message }, 'socket error');
    this.#closeInfo ??= {
      reason: 'connection_closed',
      error: new WireError('connection_closed', `connection lost: ${error.message}`, { cause: error }),
      byPeer: true,
    };
    this.#inputDone = true;
    this.#wake();
  }

  #onClose(): void {
    if (this.#socketClosed) return;
    this.#socketClosed = true;
    this.#clearDestroyTimer();
    if (!this.#closeInfo) {
      // Closed without 'end' or 'error' (destroyed locally, or a peer that vanished mid-frame).
      const pending = this.#decoder.pendingBytes;
      this.#closeInfo =
        pending > 0
          ? {
              reason: 'truncated_frame',
              error: new WireError(
                'truncated_frame',
                `connection closed inside a frame (${pending} bytes received)`,
              ),
              byPeer: true,
            }
          : { reason: this.#peerGoodbye?.reason || CLOSE_REASONS.peerClosed, byPeer: true };
    }
    this.#inputDone = true;
    this.#rejectOutgoing();
    this.#resolveClosed(this.#closeInfo);
    this.#wake();
  }

  /** Bad bytes from the peer: stop reading, tell the peer why (best effort), close, and surface the error. */
  #failInput(error: WireError): void {
    this.#logger.warn(
      { remoteAddress: this.remoteAddress, code: error.code, error: error.message },
      'closing connection after bad input',
    );
    this.#closing ??= this.#shutdown(
      { reason: error.code, error, byPeer: false },
      { reason: error.code, detail: error.message },
    );
  }

  async #shutdown(
    info: ConnectionClosed,
    goodbye: { reason: string; detail: string } | undefined,
  ): Promise<void> {
    const wasOpen = this.#closeInfo === undefined;
    this.#closeInfo ??= info;
    this.#inputDone = true;
    if (!info.byPeer && !info.error) {
      this.#queue = [];
      this.#queueHead = 0;
      this.#queuedBytes = 0;
    }
    this.#wake();
    if (this.#socketClosed) return;
    // A peer that sent bad bytes gets no more reading: whatever else it sends (the rest of a huge frame it
    // announced) must not be read into memory. Its Goodbye is flushed (bounded), then the socket is destroyed.
    const badInput = info.error !== undefined && !info.byPeer;
    if (badInput) {
      this.#socket.pause();
    } else {
      // Keep reading (and discarding) so the peer's FIN is seen and its writes do not stall.
      this.#pausedForBackpressure = false;
      this.#socket.resume();
    }
    if (this.#socket.writable) {
      if (goodbye && wasOpen) {
        this.#enqueueWrite(encodeFrame(build.goodbye(goodbye.reason, goodbye.detail))).catch(() => undefined);
      }
      // Frames sent before close() (and the Goodbye) go out first, within the bound.
      const last = this.#lastWrite;
      await withTimeout(last ? last.then(ignore, ignore) : Promise.resolve(), this.#closeTimeoutMs);
    }
    if (!this.#socketClosed) {
      if (badInput) {
        this.#socket.destroy();
      } else {
        this.#socket.end();
        this.#armDestroyTimer();
      }
    }
    await this.closed;
  }

  #destroyTimer: ClockTimer | undefined;

  /** The peer gets closeTimeoutMs to finish closing; then the socket is destroyed. */
  #armDestroyTimer(): void {
    if (this.#destroyTimer || this.#socketClosed) return;
    this.#destroyTimer = systemClock.setTimeout(
      () => {
        this.#destroyTimer = undefined;
        if (!this.#socketClosed) {
          this.#logger.debug(
            { remoteAddress: this.remoteAddress },
            'peer did not finish closing; destroying socket',
          );
          this.#socket.destroy();
        }
      },
      this.#closeTimeoutMs,
      { keepAlive: true },
    );
  }

  #clearDestroyTimer(): void {
    if (this.#destroyTimer) systemClock.clearTimeout(this.#destroyTimer);
    this.#destroyTimer = undefined;
  }

  #enqueueWrite(frame: Buffer): Promise<void> {
    const written = new Promise<void>((resolve, reject) => {
      this.#outgoing.push({ frame, resolve, reject });
      // Frames sent during one event-loop turn go out together as one corked writev, at the end of the turn's I/O
      // callbacks (setImmediate): under load one turn handles many upstream reads and run requests, and their
      // frames (every run's events, not just one burst of deltas) share a syscall instead of one write each. A
      // frame waits at most for the callbacks of the turn in progress, never for a timer or for more input.
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(this.#flush);
      }
    });
    // Kept as is: a settle-either-way copy is made only when a close waits for it, not per frame.
    this.#lastWrite = written;
    return written;
  }

  /**
   * Writes queued frames in order until the socket asks to wait for 'drain'. Consecutive small frames are copied
   * into one buffer (up to WRITE_BATCH_BYTES) and written at once: one write and one iovec instead of a writev
   * of one iovec per frame (on loopback the sender's syscall also pays the receiver's TCP work per segment).
   */
  #pump(): void {
    const socket = this.#socket;
    const queue = this.#outgoing;
    while (this.#outgoingHead < queue.length && !socket.writableNeedDrain) {
      if (socket.destroyed || socket.writableEnded) {
        this.#rejectOutgoing();
        return;
      }
      const first = this.#outgoingHead;
      let end = first + 1;
      let bytes = queue[first].frame.length;
      while (end < queue.length && bytes + queue[end].frame.length <= WRITE_BATCH_BYTES) {
        bytes += queue[end].frame.length;
        end += 1;
      }
      this.#outgoingHead = end;
      if (end === first + 1) {
        const item = queue[first];
        queue[first] = undefined as unknown as PendingWrite;
        socket.write(item.frame, (error) => this.#settle(item, error));
        continue;
      }
      const items = queue.slice(first, end);
      const data = Buffer.allocUnsafe(bytes);
      let offset = 0;
      for (let index = first; index < end; index += 1) {
        data.set(queue[index].frame, offset);
        offset += queue[index].frame.length;
        queue[index] = undefined as unknown as PendingWrite;
      }
      socket.write(data, (error) => {
        for (const item of items) this.#settle(item, error);
      });
    }
    if (this.#outgoingHead === queue.length) {
      this.#outgoing = [];
      this.#outgoingHead = 0;
    }
  }

  #settle(item: PendingWrite, error: Error | null | undefined): void {
    if (error) item.reject(this.#writeError(error));
    else item.resolve();
  }

  #rejectOutgoing(): void {
    const pending = this.#outgoing.slice(this.#outgoingHead);
    this.#outgoing = [];
    this.#outgoingHead = 0;
    for (const item of pending) item.reject(this.#closedError());
  }

  #writeError(error: Error): WireError {
    if (this.#closeInfo || this.#socket.destroyed) return this.#closedError(error);
    return new WireError('write_failed', `write failed: ${error.message}`, { cause: error });
  }

  #closedError(cause?: unknown): WireError {
    const reason = this.#closeInfo?.reason ?? 'closed';
    return new WireError('connection_closed', `connection to ${this.remoteAddress} is closed (${reason})`, {
      cause: cause ?? this.#closeInfo?.error,
    });
  }
}

function ignore(): undefined {
  return undefined;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function formatAddress(address: string | undefined, port: number | undefined): string {
  if (!address) return 'unknown';
  const host = address.includes(':') ? `[${address}]` : address;
  return port === undefined ? host : `${host}:${port}`;
}

async function withTimeout(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: ClockTimer | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<void>(
        (resolve) => (timer = systemClock.setTimeout(resolve, timeoutMs, { keepAlive: true })),
      ),
    ]);
  } finally {
    if (timer) systemClock.clearTimeout(timer);
  }
}
