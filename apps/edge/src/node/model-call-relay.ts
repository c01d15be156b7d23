// The edge's end of agents' model calls on one node link (issue 42; the node's end is apps/node's
// model-endpoint/). The node sends ModelCallOpen when an agent connects to its run's loopback model endpoint, then
// the connection's bytes as ModelCallData and ModelCallClose at its end. Each call becomes an in-memory socket
// (ModelCallSocket) handed to the OpenAI listener's own http.Server, so the request is parsed, authenticated (with
// the run's secret: model-call-socket.ts tells the surfaces what the socket is) and served by the very handler of
// the public listener; the response bytes go back as ModelCallData. Nothing of the APIs is implemented here.
//
// A call is refused (ModelCallClose `refused`, and counted as a child run refused before it started) when the
// parent is not a live run executing on this link's node (a node naming another node's run), when no listener
// serves model calls, or over the bounds (calls per link, calls per parent run). Bytes from the
// node that the HTTP server has not read yet are bounded per call (`overflow`). Bytes towards the node are written
// one frame at a time (≤ chunkBytes each), the next only after the link took the last, so a slow link slows the
// response's writer instead of growing a buffer. Lifecycle: `closeAll` when the link ends destroys every socket
// (their runs see a client disconnect and are cancelled).
import { Duplex } from 'node:stream';
import { envelope, type Envelope } from '@iop/wire';
import type { Clock, ClockTimer } from '../clock.js';
import type { Logger } from '../logging.js';
import { markModelCall, type ServeConnection } from '../http/model-call-socket.js';

export interface ModelCallLimits {
  /** Open calls on one node link. */
  maxCallsPerLink: number;
  /** Open calls of one parent run. */
  maxCallsPerParent: number;
  /** Bytes from the node a call may hold unread by the HTTP server. */
  maxPendingBytes: number;
  /** Largest ModelCallData payload sent to the node. */
  chunkBytes: number;
}

export const DEFAULT_MODEL_CALL_LIMITS: Readonly<ModelCallLimits> = Object.freeze({
  maxCallsPerLink: 256,
  maxCallsPerParent: 16,
  maxPendingBytes: 1024 * 1024,
  chunkBytes: 64 * 1024,
});

/** What the edge runtime gives every node link for its model calls. */
export interface ModelCallTermination {
  /** The listener's connection server, when one is attached (the OpenAI surface). */
  server(): ServeConnection | undefined;
  /** True when `runId` is a live run executing on `nodeId` (the service's resolveParent). */
  confirmParent(parent: { runId: string; nodeId: string }): boolean;
  /**
   * A call was refused before it reached the listener (a child run refused before it started:
   * iop_child_runs_total{result="rejected"}); `why` as logged.
   */
  refused?(why: string): void;
  limits?: Partial<ModelCallLimits>;
}

export const MODEL_CALL_CLOSE_REASONS = {
  refused: 'refused',
  overflow: 'overflow',
  linkClosed: 'link_closed',
  error: 'error',
} as const;

interface RelayOptions {
  nodeId: string;
  termination: ModelCallTermination;
  send(message: Envelope): Promise<void>;
  logger: Logger;
  /** Runs the calls' idle timers (the timeouts node:http sets on a connection). */
  clock: Clock;
}

/** The model calls of one node link. */
export class ModelCallRelay {
  private readonly calls = new Map<string, ModelCallSocket>();
  private readonly perParent = new Map<string, number>();
  private readonly limits: ModelCallLimits;
  private closed = false;

  constructor(private readonly options: RelayOptions) {
    this.limits = { ...DEFAULT_MODEL_CALL_LIMITS, ...options.termination.limits };
  }

  /** Open calls (tests, diagnostics). */
  get size(): number {
    return this.calls.size;
  }

  open(callId: string, parentRunId: string): void {
    const { nodeId, termination, logger } = this.options;
    const refuse = (why: string): void => {
      logger.info({ nodeId, callId, parentRunId, why }, 'model call refused');
      termination.refused?.(why);
      this.sendQuietly(envelope.modelCallClose(callId, MODEL_CALL_CLOSE_REASONS.refused));
    };
    if (this.closed) return;
    if (callId === '' || this.calls.has(callId)) return refuse('call id empty or in use');
    if (this.calls.size >= this.limits.maxCallsPerLink) return refuse('too many model calls on this link');
    if ((this.perParent.get(parentRunId) ?? 0) >= this.limits.maxCallsPerParent) {
      return refuse('too many model calls of this run');
    }
    if (!termination.confirmParent({ runId: parentRunId, nodeId })) {
      return refuse('the parent is not a live run on this node');
    }
    const serve = termination.server();
    if (!serve) return refuse('no listener serves model calls');
    const socket = new ModelCallSocket(callId, this.limits.chunkBytes, this.options.clock, (message) =>
      this.options.send(message),
    );
    this.calls.set(callId, socket);
    this.perParent.set(parentRunId, (this.perParent.get(parentRunId) ?? 0) + 1);
    socket.once('close', () => {
      if (this.calls.get(callId) === socket) this.calls.delete(callId);
      const left = (this.perParent.get(parentRunId) ?? 1) - 1;
      if (left > 0) this.perParent.set(parentRunId, left);
      else this.perParent.delete(parentRunId);
    });
    markModelCall(socket, { parentRunId, nodeId });
    serve(socket);
  }

  data(callId: string, data: Uint8Array): void {
    const socket = this.calls.get(callId);
    if (!socket) return;
    if (!socket.deliver(data, this.limits.maxPendingBytes)) {
      this.options.logger.warn({ nodeId: this.options.nodeId, callId }, 'model call overflowed');
      socket.abort(MODEL_CALL_CLOSE_REASONS.overflow);
    }
  }

  close(callId: string, reason: string): void {
    const socket = this.calls.get(callId);
    if (!socket) return;
    if (reason === '') socket.endFromPeer();
    else socket.closedByPeer();
  }

  /** The link ended: every call's socket is destroyed (nothing can be sent any more). */
  closeAll(): void {
    this.closed = true;
    for (const socket of [...this.calls.values()]) socket.closedByPeer();
    this.calls.clear();
    this.perParent.clear();
  }

  private sendQuietly(message: Envelope): void {
    this.options.send(message).catch(() => undefined);
  }
}

/**
 * One model call as a socket for node:http: what the node sent is readable, what the server writes goes to the
 * node as ModelCallData, the server's end of the connection is ModelCallClose. Carries the few socket methods
 * node:http calls (timeouts, no-delay, keep-alive) so the server's own timers work on it.
 */
export class ModelCallSocket extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 0;
  readonly remoteFamily = 'IPv4';
  readonly localAddress = undefined;
  readonly localPort = undefined;
  private closeSent = false;
  private timeoutMs = 0;
  /** The idle timer and the delay it was set with (re-armed in place while the delay stays the same). */
  private timer: ClockTimer | undefined;
  private timerMs = 0;
  private readonly onIdle = (): void => {
    this.emit('timeout');
  };

  constructor(
    readonly callId: string,
    private readonly chunkBytes: number,
    private readonly clock: Clock,
    private readonly sendFrame: (message: Envelope) => Promise<void>,
  ) {
    super({ allowHalfOpen: false });
  }

  /** Bytes from the node; false when the unread bytes would exceed `maxPending`. */
  deliver(data: Uint8Array, maxPending: number): boolean {
    if (this.destroyed || this.readableEnded) return true;
    if (this.readableLength + data.byteLength > maxPending) return false;
    this.touch();
    this.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    return true;
  }

  /** The node's side ended (a plain ModelCallClose): no more bytes arrive; the server ends its side in turn. */
  endFromPeer(): void {
    if (!this.destroyed) this.push(null);
  }

  /** The node's side is gone abnormally (or the link): nothing more is sent for this call. */
  closedByPeer(): void {
    this.closeSent = true;
    this.destroy();
  }

  /** Ends the call with `reason` sent to the node. */
  abort(reason: string): void {
    this.sendClose(reason);
    this.destroy();
  }

  override _read(): void {
    // Bytes are pushed as frames arrive (deliver); the pending bound replaces a pause towards the node.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.touch();
    this.writeChunks(chunk).then(
      () => callback(),
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.sendClose('');
    callback();
    // The server ended the connection (`Connection: close`, keep-alive timeout): it reads nothing more from it, so
    // the call is over here; the node ends the agent's socket on the close frame.
    setImmediate(() => this.destroy());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.sendClose(error ? MODEL_CALL_CLOSE_REASONS.error : '');
    callback(error);
  }

  /** node:http sets the keep-alive and request timeouts through this. */
  setTimeout(ms: number, listener?: () => void): this {
    this.timeoutMs = ms;
    if (listener) this.once('timeout', listener);
    this.touch();
    return this;
  }

  /** node:http ends a `Connection: close` exchange with this. */
  destroySoon(): void {
    this.end();
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  private async writeChunks(chunk: Buffer): Promise<void> {
    for (let offset = 0; offset < chunk.byteLength; offset += this.chunkBytes) {
      await this.sendFrame(
        envelope.modelCallData(this.callId, chunk.subarray(offset, offset + this.chunkBytes)),
      );
    }
  }

  private sendClose(reason: string): void {
    if (this.closeSent) return;
    this.closeSent = true;
    this.sendFrame(envelope.modelCallClose(this.callId, reason)).catch(() => undefined);
  }

  /** Restarts the idle timer node:http asked for. */
  private touch(): void {
    if (this.timeoutMs <= 0 || this.destroyed) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    if (this.timer !== undefined && this.timerMs === this.timeoutMs) {
      this.timer.refresh();
      return;
    }
    this.clock.clearTimeout(this.timer);
    this.timerMs = this.timeoutMs;
    this.timer = this.clock.setTimeout(this.onIdle, this.timeoutMs);
  }
}
