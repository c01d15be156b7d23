// The production HttpClient: our own HTTP/1.1 client on net / tls sockets with a per-origin keep-alive pool.
// Every inference call goes through it. A client micro-benchmark (a 2 ms backend, 16 concurrent small POSTs)
// measured node:http with a keep-alive agent at ~120-146 µs of CPU per request and a bare keep-alive socket at
// ~30 µs: node:http's per-request objects (ClientRequest, IncomingMessage, their streams, agent bookkeeping) were
// the node's largest single CPU item. This client writes the request head and body in one write, parses the
// response in place, and hands the body out through a small hand-written async iterator.
//
// Lifecycle: idle pooled sockets are unref'd (they never keep the process alive), reused LIFO, and closed after
// `idleSocketMs` (below the common 5 s server keep-alive timeout, and a second below a shorter `keep-alive:
// timeout=N` the server announces, so a request rarely lands on a socket the server is closing; when one does, the
// request is retried once on a new connection). `close()` destroys every pooled
// socket. A socket returns to the pool only once its response was read to the end and its request fully written.
// Cancellation: aborting the request's signal destroys its socket at once (the backend sees the connection close
// and stops generating); `cancel()` on a response does the same mid-body; `discard()` drains the rest instead.
import net from 'node:net';
import tls from 'node:tls';
import type { Clock, ClockTimer } from '@iop/clock';

import {
  HttpProtocolError,
  MAX_HEAD_BYTES,
  parseResponseHead,
  requestHead,
  requestTarget,
  type Framing,
  type RequestTarget,
} from './http1-head.js';
import type { HttpClient, HttpClientRequest, HttpClientResponse } from './http-client.js';

/** How long `discard()` waits for the rest of a body before it closes the connection instead. */
const DISCARD_LIMIT_MS = 1000;

/** Body bytes queued for a consumer that has not pulled them before the socket is paused. */
const BODY_HIGH_WATER = 64 * 1024;

export interface NodeHttpClientOptions {
  /** Times the idle pooled sockets and a discarded body's drain. */
  clock: Clock;
  /** Idle time after which a pooled socket is closed. Default 4000 ms. */
  idleSocketMs?: number;
  /** Most idle sockets kept per origin. Default 256. */
  maxFreeSockets?: number;
  /** Extra CA certificates trusted for https besides the default ones (tests with a self-signed server). */
  extraCaCertificates?: string[];
  /** Opens the sockets (net.connect / tls.connect). Tests pass one that behaves like another platform's. */
  connector?: SocketConnector;
}

/** How the client opens a connection: both return a socket that is still connecting. */
export interface SocketConnector {
  tcp(options: net.TcpNetConnectOpts): net.Socket;
  tls(options: tls.ConnectionOptions): net.Socket;
}

const defaultConnector: SocketConnector = {
  tcp: (options) => net.connect(options),
  tls: (options) => tls.connect(options),
};

/** TCP keep-alive probes start after this much silence (as node:http's agent): a vanished peer is noticed. */
const TCP_KEEPALIVE_DELAY_MS = 1000;

/**
 * Turns TCP keep-alive on once the socket is connected, never while it is connecting. Asked for before the
 * connect, libuv on Windows applies it as it creates the socket, and when the stack refuses one of the
 * keep-alive options (Wine; Windows before 10 1709 has no TCP_KEEPCNT) the connect itself fails with `UNKNOWN`,
 * so every request fails. On a connected socket the same refusal only leaves keep-alive off.
 */
function enableKeepAlive(this: net.Socket): void {
  this.setKeepAlive(true, TCP_KEEPALIVE_DELAY_MS);
}

export interface NodeHttpClient extends HttpClient {
  /** Closes the pooled sockets; requests in flight keep theirs until they end. */
  close(): void;
  /** Connections opened so far (a keep-alive pool opens few; one per request means reuse is broken). */
  readonly connectionsOpened: number;
}

/** Parsed request URLs kept (see `request`). */
const MAX_PARSED_URLS = 64;

/** Errors of a pooled socket the server closed just before reuse: the request never reached the server. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

const CRLF_CRLF = Buffer.from('\r\n\r\n', 'latin1');
const LF_LF = Buffer.from('\n\n', 'latin1');

/** The value of a hex digit's character code, or -1. */
function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

function abortError(): Error {
  const error = new Error('request aborted');
  error.name = 'AbortError';
  return error;
}

/** What node:http reports for a connection closed before any response: the same code and message. */
function hangUpError(): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error('socket hang up');
  error.code = 'ECONNRESET';
  return error;
}

const DONE: IteratorResult<Uint8Array> = { done: true, value: undefined };

/**
 * A response body: an async iterator over the body bytes the connection parses (views of the socket's buffers;
 * what one socket read brought is handed over as one chunk). Bytes the consumer has not pulled are queued; past
 * BODY_HIGH_WATER the socket is paused until it pulls again. Once the message is complete the body is detached
 * from its connection (which may already carry the next request): what is queued stays readable, and
 * cancel/discard no longer touch the socket.
 */
class ResponseBody implements AsyncIterator<Uint8Array>, AsyncIterable<Uint8Array> {
  connection: Connection | undefined;
  private queue: Uint8Array[] = [];
  private queuedBytes = 0;
  private paused = false;
  private ended = false;
  private error: Error | undefined;
  private waiting:
    { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: Error) => void } | undefined;
  /** discard() was called: body bytes are dropped as they arrive. */
  discarding = false;
  private discardTimer: ClockTimer | undefined;
  private readonly clock: Clock;

  constructor(connection: Connection) {
    this.connection = connection;
    this.clock = connection.clock;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.queue.length > 0) return Promise.resolve({ done: false, value: this.take() });
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** Leaving a `for await` early leaves the body as it is: `discard()` or `cancel()` decides about the rest. */
  return(): Promise<IteratorResult<Uint8Array>> {
    return Promise.resolve(DONE);
  }

  /**
   * A chunk parsed from the socket. Queued, not handed over at once: `flush()` after the socket read hands a
   * waiting consumer everything that read brought as one chunk (many small HTTP chunks arrive in one read when
   * a stream is fast; one pull each would cost the consumer a promise and an await per chunk).
   */
  push(chunk: Uint8Array): void {
    if (this.discarding) return;
    this.queue.push(chunk);
    this.queuedBytes += chunk.byteLength;
    if (!this.paused && this.queuedBytes > BODY_HIGH_WATER && this.connection !== undefined) {
      this.paused = true;
      this.connection.socket.pause();
    }
  }

  /** The socket read is parsed: a waiting consumer gets what it brought. */
  flush(): void {
    const waiting = this.waiting;
    if (waiting === undefined || this.queue.length === 0) return;
    this.waiting = undefined;
    waiting.resolve({ done: false, value: this.take() });
  }

  /** The message is complete: the connection goes its own way. */
  end(): void {
    this.detach();
    if (this.ended) return;
    this.ended = true;
    const waiting = this.waiting;
    if (waiting === undefined) return;
    this.waiting = undefined;
    waiting.resolve(this.queue.length > 0 ? { done: false, value: this.take() } : DONE);
  }

  /** The body broke (connection lost, malformed, aborted): the next pull throws `error` (after what is queued). */
  fail(error: Error): void {
    this.detach();
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    const waiting = this.waiting;
    if (waiting === undefined) return;
    this.waiting = undefined;
    if (this.queue.length > 0) waiting.resolve({ done: false, value: this.take() });
    else waiting.reject(error);
  }

  /** Everything queued, as one chunk. */
  private take(): Uint8Array {
    const queue = this.queue;
    let value: Uint8Array;
    if (queue.length === 1) {
      value = queue[0];
      queue.length = 0;
    } else {
      value = Buffer.concat(queue, this.queuedBytes);
      this.queue = [];
    }
    this.queuedBytes = 0;
    if (this.paused) {
      this.paused = false;
      this.connection?.socket.resume();
    }
    return value;
  }

  cancel(): void {
    const connection = this.connection;
    this.dropQueue();
    if (connection === undefined) return;
    // A half-read response cannot return its socket to the pool: close it so the backend stops.
    connection.fail(new HttpProtocolError('response cancelled', 'ERR_CANCELLED'));
  }

  discard(): void {
    this.dropQueue();
    const connection = this.connection;
    if (connection === undefined || this.discarding) return;
    this.discarding = true;
    if (this.paused) {
      this.paused = false;
      connection.socket.resume();
    }
    this.discardTimer = this.clock.setTimeout(() => {
      this.discardTimer = undefined;
      if (this.connection === connection) {
        connection.fail(new HttpProtocolError('response body not drained in time', 'ERR_CANCELLED'));
      }
    }, DISCARD_LIMIT_MS);
  }

  private dropQueue(): void {
    this.queue = [];
    this.queuedBytes = 0;
    if (!this.ended) {
      this.ended = true;
      const waiting = this.waiting;
      if (waiting !== undefined) {
        this.waiting = undefined;
        waiting.resolve(DONE);
      }
    }
  }

  private detach(): void {
    const connection = this.connection;
    this.connection = undefined;
    if (this.discardTimer !== undefined) {
      this.clock.clearTimeout(this.discardTimer);
      this.discardTimer = undefined;
    }
    // A complete message must not leave its socket paused for the next request.
    if (this.paused && connection !== undefined) connection.socket.resume();
    this.paused = false;
  }
}

/** One request in flight, from the write to its response's last byte. */
interface Exchange {
  target: RequestTarget;
  init: HttpClientRequest;
  payload: string | Buffer;
  headRequest: boolean;
  requestClose: boolean;
  retried: boolean;
  resolve: (response: HttpClientResponse) => void;
  reject: (error: unknown) => void;
  onAbort: () => void;
}

const State = {
  idle: 0,
  head: 1,
  length: 2,
  chunkSize: 3,
  chunkData: 4,
  chunkDataEnd: 5,
  trailers: 6,
  close: 7,
} as const;
type ParseState = (typeof State)[keyof typeof State];

/** Pools keyed by origin, LIFO. */
class Pool {
  private readonly free = new Map<string, Connection[]>();
  constructor(
    readonly idleSocketMs: number,
    private readonly maxFreeSockets: number,
  ) {}

  take(key: string): Connection | undefined {
    const list = this.free.get(key);
    if (list === undefined) return undefined;
    for (;;) {
      const connection = list.pop();
      if (connection === undefined) return undefined;
      connection.pooled = false;
      if (connection.usable()) return connection;
      connection.destroy();
    }
  }

  release(connection: Connection): void {
    let list = this.free.get(connection.key);
    if (list === undefined) {
      list = [];
      this.free.set(connection.key, list);
    }
    if (list.length >= this.maxFreeSockets) {
      connection.destroy();
      return;
    }
    connection.pooled = true;
    list.push(connection);
  }

  remove(connection: Connection): void {
    connection.pooled = false;
    const list = this.free.get(connection.key);
    const at = list?.indexOf(connection) ?? -1;
    if (at >= 0) list?.splice(at, 1);
  }

  closeAll(): void {
    for (const list of this.free.values()) {
      for (const connection of list.splice(0)) {
        connection.pooled = false;
        connection.destroy();
      }
    }
    this.free.clear();
  }
}

/**
 * One socket and the response parser on it. The socket's listeners are installed once and serve every request
 * the connection carries; per request there is only the Exchange and, once the head arrived, a ResponseBody.
 */
class Connection {
  pooled = false;
  /** It carried a request before: a failure before any response byte may be a stale socket. */
  reused = false;
  private exchange: Exchange | undefined;
  private body: ResponseBody | undefined;
  private state: ParseState = State.idle;
  private gotBytes = false;
  private keepAlive = false;
  /** How long this connection may stay idle in the pool (the pool's limit, or less when the server says so). */
  private idleMs = 0;
  private idleTimerMs = 0;
  private headBuffer: Buffer | undefined;
  /** Bytes left of a content-length body or of the current chunk. */
  private remaining = 0;
  /** A chunk-size or trailer line split across socket reads. */
  private partialLine = '';
  private trailerBytes = 0;
  private idleTimer: ClockTimer | undefined;
  private destroyed = false;
  readonly clock: Clock;

  constructor(
    readonly socket: net.Socket,
    readonly key: string,
    private readonly client: ClientCore,
  ) {
    this.clock = client.clock;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error: Error) => this.fail(error));
    socket.on('end', () => this.onEnd());
    socket.on('close', () => this.onEnd());
  }

  usable(): boolean {
    return !this.destroyed && !this.socket.destroyed && this.socket.writable && this.socket.readable;
  }

  start(exchange: Exchange): void {
    this.exchange = exchange;
    this.state = State.head;
    this.gotBytes = false;
    if (this.reused) this.socket.ref();
    exchange.init.signal.addEventListener('abort', exchange.onAbort);
    this.socket.write(exchange.payload);
  }

  /** Ends the current request with `error` (rejecting it or breaking its body) and closes the socket. */
  fail(error: Error): void {
    const exchange = this.exchange;
    const body = this.body;
    this.release(exchange);
    this.destroy();
    if (exchange === undefined) return;
    if (body !== undefined) {
      body.fail(error);
      return;
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (
      this.reused &&
      !this.gotBytes &&
      !exchange.retried &&
      !exchange.init.signal.aborted &&
      code !== undefined &&
      STALE_SOCKET_CODES.has(code)
    ) {
      this.client.retry(exchange);
      return;
    }
    exchange.reject(error);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.pooled) this.client.pool.remove(this);
    this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.socket.destroy();
  }

  /** Aborting the request's signal: before the response a rejection, mid-body a broken body; the socket goes. */
  abort(): void {
    this.fail(abortError());
  }

  private release(exchange: Exchange | undefined): void {
    if (exchange !== undefined) exchange.init.signal.removeEventListener('abort', exchange.onAbort);
    this.exchange = undefined;
    this.body = undefined;
    this.state = State.idle;
    this.headBuffer = undefined;
    this.partialLine = '';
  }

  private onEnd(): void {
    const exchange = this.exchange;
    if (exchange === undefined) {
      this.destroy();
      return;
    }
    if (this.state === State.close) {
      // A close-delimited body ends with the connection.
      const body = this.body;
      this.release(exchange);
      this.destroy();
      body?.end();
      return;
    }
    if (
      this.body === undefined &&
      this.reused &&
      !this.gotBytes &&
      !exchange.retried &&
      !exchange.init.signal.aborted
    ) {
      // The server closed the pooled socket as the request went out: it never saw it.
      this.release(exchange);
      this.destroy();
      this.client.retry(exchange);
      return;
    }
    this.fail(
      this.body === undefined
        ? hangUpError()
        : new HttpProtocolError(
            'upstream closed the connection before the response body ended',
            'ECONNRESET',
          ),
    );
  }

  /** The message is read to its end: the body ends, and the socket is pooled if it can carry another request. */
  private complete(leftover: boolean): void {
    const exchange = this.exchange;
    const body = this.body;
    const reusable =
      this.keepAlive &&
      this.idleMs > 0 &&
      !leftover &&
      exchange !== undefined &&
      !exchange.requestClose &&
      this.socket.writableLength === 0 &&
      this.usable();
    this.release(exchange);
    body?.end();
    if (!reusable) {
      this.destroy();
      return;
    }
    this.reused = true;
    this.socket.unref();
    if (this.idleTimer === undefined || this.idleTimerMs !== this.idleMs) {
      this.clock.clearTimeout(this.idleTimer);
      this.idleTimerMs = this.idleMs;
      this.idleTimer = this.clock.setTimeout(() => {
        if (this.pooled) this.destroy();
      }, this.idleMs);
    } else {
      this.idleTimer.refresh();
    }
    this.client.pool.release(this);
  }

  private onData(chunk: Buffer): void {
    if (this.exchange === undefined) {
      // Bytes nobody asked for: the connection's framing cannot be trusted any more.
      this.destroy();
      return;
    }
    this.gotBytes = true;
    try {
      this.parse(chunk);
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.body?.flush();
  }

  /** Hands the body up to `remaining` bytes of `chunk` from `offset`; returns the offset after them. */
  private pushBody(chunk: Buffer, offset: number): number {
    const take = Math.min(this.remaining, chunk.length - offset);
    this.body?.push(chunk.subarray(offset, offset + take));
    this.remaining -= take;
    return offset + take;
  }

  private parse(input: Buffer): void {
    let chunk = input;
    let offset = 0;
    while (offset < chunk.length) {
      switch (this.state) {
        case State.head: {
          let buffer = offset === 0 ? chunk : chunk.subarray(offset);
          let from = 0;
          if (this.headBuffer !== undefined) {
            from = Math.max(0, this.headBuffer.length - 3);
            buffer = Buffer.concat([this.headBuffer, buffer]);
            this.headBuffer = undefined;
          }
          let end = buffer.indexOf(CRLF_CRLF, from);
          let bodyStart = end + 4;
          // Tolerated as by node:http: a head whose lines end in a bare LF.
          const lfEnd = buffer.indexOf(LF_LF, from);
          if (lfEnd >= 0 && (end < 0 || lfEnd < end)) {
            end = lfEnd;
            bodyStart = lfEnd + 2;
          }
          if (end < 0 || bodyStart > MAX_HEAD_BYTES) {
            if (buffer.length > MAX_HEAD_BYTES) {
              throw new HttpProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
            }
            this.headBuffer = buffer;
            return;
          }
          chunk = buffer;
          offset = bodyStart;
          const text = buffer.toString('latin1', 0, end);
          this.onHead(bodyStart === end + 4 ? text : text.replace(/\r?\n/g, '\r\n').replace(/\r$/, ''));
          if (this.exchange === undefined) {
            // Completed at once (no body): anything after the head is not ours.
            if (offset < chunk.length) this.destroy();
            return;
          }
          break;
        }
        case State.length: {
          offset = this.pushBody(chunk, offset);
          if (this.remaining === 0) {
            this.complete(offset < chunk.length);
            return;
          }
          break;
        }
        case State.chunkSize: {
          // Fast path: the whole size line in this read, without extensions ("1a\r\n").
          if (this.partialLine === '') {
            let size = 0;
            let at = offset;
            while (at < chunk.length && at - offset < 12) {
              const digit = hexValue(chunk[at]);
              if (digit < 0) break;
              size = size * 16 + digit;
              at += 1;
            }
            if (at > offset && at + 1 < chunk.length && chunk[at] === 0x0d && chunk[at + 1] === 0x0a) {
              offset = at + 2;
              this.chunkSize(size);
              break;
            }
          }
          const next = this.readLine(chunk, offset);
          if (next < 0) return;
          offset = next;
          const line = this.takeLine();
          const semicolon = line.indexOf(';');
          const sizeText = (semicolon < 0 ? line : line.slice(0, semicolon)).trim();
          if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) {
            throw new HttpProtocolError(`malformed chunk size ${JSON.stringify(line.slice(0, 40))}`);
          }
          this.chunkSize(parseInt(sizeText, 16));
          break;
        }
        case State.chunkData: {
          offset = this.pushBody(chunk, offset);
          if (this.remaining === 0) this.state = State.chunkDataEnd;
          break;
        }
        case State.chunkDataEnd: {
          if (
            this.partialLine === '' &&
            offset + 1 < chunk.length &&
            chunk[offset] === 0x0d &&
            chunk[offset + 1] === 0x0a
          ) {
            offset += 2;
            this.state = State.chunkSize;
            break;
          }
          const next = this.readLine(chunk, offset);
          if (next < 0) return;
          offset = next;
          if (this.takeLine() !== '')
            throw new HttpProtocolError('malformed chunked body: no CRLF after a chunk');
          this.state = State.chunkSize;
          break;
        }
        case State.trailers: {
          const start = offset;
          const next = this.readLine(chunk, offset);
          this.trailerBytes += (next < 0 ? chunk.length : next) - start;
          if (this.trailerBytes > MAX_HEAD_BYTES) {
            throw new HttpProtocolError(`response trailers over ${MAX_HEAD_BYTES} bytes`);
          }
          if (next < 0) return;
          offset = next;
          if (this.takeLine() === '') {
            this.complete(offset < chunk.length);
            return;
          }
          break;
        }
        case State.close: {
          this.body?.push(offset === 0 ? chunk : chunk.subarray(offset));
          return;
        }
        case State.idle:
          return;
      }
    }
  }

  private chunkSize(size: number): void {
    if (size === 0) {
      this.state = State.trailers;
      this.trailerBytes = 0;
    } else {
      this.remaining = size;
      this.state = State.chunkData;
    }
  }

  /** Reads up to and including a LF; returns the offset after it, or -1 with the partial line kept. */
  private readLine(chunk: Buffer, offset: number): number {
    const lf = chunk.indexOf(0x0a, offset);
    if (lf < 0) {
      this.partialLine += chunk.toString('latin1', offset);
      if (this.partialLine.length > MAX_HEAD_BYTES) throw new HttpProtocolError('response line too long');
      return -1;
    }
    this.partialLine += chunk.toString('latin1', offset, lf);
    return lf + 1;
  }

  private takeLine(): string {
    let line = this.partialLine;
    this.partialLine = '';
    if (line.endsWith('\r')) line = line.slice(0, -1);
    return line;
  }

  private onHead(text: string): void {
    const exchange = this.exchange as Exchange;
    const head = parseResponseHead(text, exchange.headRequest);
    if (head.status < 200) {
      if (head.status === 101) throw new HttpProtocolError('unexpected 101 Switching Protocols');
      // An interim response (100 Continue, 103 Early Hints): the real one follows.
      return;
    }
    this.keepAlive = head.keepAlive;
    // A server that closes idle connections sooner than our pool would: close ours a second before it does, so
    // a request rarely lands on a socket it is closing (node:http's agent follows the same hint).
    const idleSocketMs = this.client.pool.idleSocketMs;
    this.idleMs =
      head.idleHintMs === undefined || head.idleHintMs - 1000 >= idleSocketMs
        ? idleSocketMs
        : head.idleHintMs - 1000;
    const body = new ResponseBody(this);
    this.body = body;
    exchange.resolve(new SocketResponse(head.status, head.statusText, head.headers, body));
    this.frame(head.framing, head.length);
  }

  private frame(framing: Framing, length: number): void {
    if (framing === 'none' || (framing === 'length' && length === 0)) {
      this.complete(false);
    } else if (framing === 'length') {
      this.remaining = length;
      this.state = State.length;
    } else if (framing === 'chunked') {
      this.state = State.chunkSize;
    } else {
      this.state = State.close;
    }
  }
}

class SocketResponse implements HttpClientResponse {
  constructor(
    readonly status: number,
    readonly statusText: string,
    private readonly headers: Map<string, string>,
    readonly body: ResponseBody,
  ) {}

  header(name: string): string | undefined {
    return this.headers.get(name.toLowerCase());
  }

  cancel(): void {
    this.body.cancel();
  }

  discard(): void {
    this.body.discard();
  }
}

/** What connections need of their client. */
interface ClientCore {
  readonly pool: Pool;
  readonly clock: Clock;
  /** Sends `exchange` again on a new connection (once: a pooled socket turned out stale). */
  retry(exchange: Exchange): void;
}

export function createNodeHttpClient(options: NodeHttpClientOptions): NodeHttpClient {
  let connectionsOpened = 0;
  const pool = new Pool(options.idleSocketMs ?? 4000, options.maxFreeSockets ?? 256);
  const ca =
    options.extraCaCertificates === undefined
      ? undefined
      : [...tls.rootCertificates, ...options.extraCaCertificates];

  const connector = options.connector ?? defaultConnector;

  function connect(target: RequestTarget): Connection {
    connectionsOpened += 1;
    const socket = target.secure
      ? connector.tls({
          host: target.hostname,
          port: target.port,
          servername: net.isIP(target.hostname) === 0 ? target.hostname : undefined,
          ALPNProtocols: ['http/1.1'],
          ca,
        })
      : connector.tcp({ host: target.hostname, port: target.port });
    socket.once('connect', enableKeepAlive);
    return new Connection(socket, target.key, core);
  }

  function dispatch(exchange: Exchange, fresh: boolean): void {
    const connection = (fresh ? undefined : pool.take(exchange.target.key)) ?? connect(exchange.target);
    exchange.onAbort = () => connection.abort();
    connection.start(exchange);
  }

  const core: ClientCore = {
    pool,
    clock: options.clock,
    retry(exchange) {
      exchange.retried = true;
      try {
        dispatch(exchange, true);
      } catch (error) {
        exchange.reject(error);
      }
    },
  };

  // An adapter calls the same few URLs on every run: parse each once. Bounded: cleared when it outgrows its size.
  const parsed = new Map<string, RequestTarget>();
  return {
    request(url, init) {
      return new Promise<HttpClientResponse>((resolve, reject) => {
        if (init.signal.aborted) {
          reject(abortError());
          return;
        }
        let target = parsed.get(url);
        if (target === undefined) {
          target = requestTarget(new URL(url));
          if (parsed.size >= MAX_PARSED_URLS) parsed.clear();
          parsed.set(url, target);
        }
        const head = requestHead(init.method, target, init.headers, init.body);
        const body = init.body;
        let payload: string | Buffer;
        if (head.latin1) {
          payload = Buffer.concat([Buffer.from(head.text, 'latin1'), Buffer.from(body ?? '', 'utf8')]);
        } else {
          payload = body === undefined ? head.text : head.text + body;
        }
        dispatch(
          {
            target,
            init,
            payload,
            headRequest: (init.method as string) === 'HEAD',
            requestClose: head.close,
            retried: false,
            resolve,
            reject,
            onAbort: () => undefined,
          },
          false,
        );
      });
    },
    close() {
      pool.closeAll();
    },
    get connectionsOpened() {
      return connectionsOpened;
    },
  };
}
