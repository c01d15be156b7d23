// The node:http core shared by the fake inference servers: listens on 127.0.0.1 (port 0 by default), records
// every request, tracks open connections and in-flight requests, injects HTTP failures, and plays token streams
// with delays, mid-stream errors, stalls and dropped sockets. Flavour modules (Ollama, OpenAI) only route and
// format bodies. `close()` destroys every open socket so a test never waits on a stalled stream.
import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import type { FakeBehavior, InjectedFailure } from './fake-behavior.js';

export type StreamFailureKind = 'mid-stream' | 'stall' | 'drop';

export type RequestOutcome = 'pending' | 'completed' | 'client-closed' | 'dropped' | 'server-closed';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; undefined when the body is empty or not JSON. */
  body: unknown;
  rawBody: string;
  receivedAt: number;
  /** How the exchange ended: `client-closed` means the client went away before the response finished. */
  outcome: RequestOutcome;
  closedAt?: number;
}

export interface FakeServer {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly behavior: FakeBehavior;
  /** Open TCP connections (keep-alive sockets included). */
  readonly activeConnections: number;
  /** Requests whose response has not ended yet. */
  readonly activeRequests: number;
  setBehavior(partial: Partial<FakeBehavior>): void;
  /** Resolves when no request is in flight; rejects after `timeoutMs`. */
  waitForIdle(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface FakeStartOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  behavior?: Partial<FakeBehavior>;
}

/** One request being answered, handed to a flavour's router. */
export interface FakeExchange {
  readonly record: RecordedRequest;
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  readonly behavior: FakeBehavior;
  /** Aborted when the client disconnects or the server closes. */
  readonly signal: AbortSignal;
  /**
   * The non-HTTP failure (mid-stream, stall, drop) that applies to this request, consumed once. `kinds` limits
   * which kinds apply (a model listing has no stream to fail in the middle of, but can stall or drop).
   */
  takeStreamFailure(kinds?: StreamFailureKind[]): InjectedFailure | undefined;
  sendJson(status: number, body: unknown, headers?: Record<string, string>): void;
  sendText(status: number, text: string, contentType?: string): void;
  sendError(status: number, message: string): void;
  /** Destroys the socket without a response, like a crashed server. */
  drop(): void;
  /** Sleeps unless the client goes away first; resolves false when it did. */
  sleep(ms: number): Promise<boolean>;
}

export interface FakeFlavor {
  /** Error body in the flavour's wire format. */
  errorBody: (status: number, message: string) => unknown;
  route: (exchange: FakeExchange) => Promise<void>;
  onBehaviorChange?: (behavior: FakeBehavior) => void;
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseJson(raw: string): unknown {
  if (raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

function pathMatches(failure: InjectedFailure, path: string): boolean {
  return failure.paths === undefined || failure.paths.includes(path);
}

/** Starts a fake server of the given flavour. Used by `startFakeOllama` and `startFakeOpenAI`. */
export async function startFakeHttpServer(
  flavor: FakeFlavor,
  defaults: FakeBehavior,
  options: FakeStartOptions = {},
): Promise<FakeServer> {
  let behavior: FakeBehavior = { ...defaults, ...options.behavior };
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const inFlight = new Set<RecordedRequest>();
  let closing = false;

  // Consumes one use of the configured failure when it applies; `times` counts down to a healed server.
  const takeFailure = (
    path: string,
    wantHttp: boolean,
    kinds?: StreamFailureKind[],
  ): InjectedFailure | undefined => {
    const failure = behavior.failure;
    if (!failure || !pathMatches(failure, path)) return undefined;
    if ((failure.kind === 'http') !== wantHttp) return undefined;
    if (failure.kind !== 'http' && kinds && !kinds.includes(failure.kind)) return undefined;
    if (failure.times !== undefined) {
      const left = failure.times - 1;
      behavior = { ...behavior, failure: left > 0 ? { ...failure, times: left } : undefined };
    }
    return failure;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://fake.invalid');
    const rawBody = await readBody(request);
    const record: RecordedRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: request.headers,
      body: parseJson(rawBody),
      rawBody,
      receivedAt: Date.now(),
      outcome: 'pending',
    };
    requests.push(record);
    inFlight.add(record);
    const aborter = new AbortController();
    let dropped = false;
    response.on('close', () => {
      inFlight.delete(record);
      record.closedAt = Date.now();
      if (response.writableFinished) record.outcome = 'completed';
      else if (dropped) record.outcome = 'dropped';
      else if (closing) record.outcome = 'server-closed';
      else record.outcome = 'client-closed';
      aborter.abort();
    });

    const sendJson = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      if (response.headersSent || response.destroyed) return;
      const text = JSON.stringify(body);
      response.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(text)),
        ...headers,
      });
      response.end(text);
    };
    const exchange: FakeExchange = {
      record,
      request,
      response,
      get behavior() {
        return behavior;
      },
      signal: aborter.signal,
      takeStreamFailure: (kinds) => takeFailure(record.path, false, kinds),
      sendJson,
      sendText: (status, text, contentType = 'text/plain; charset=utf-8') => {
        if (response.headersSent || response.destroyed) return;
        response.writeHead(status, {
          'content-type': contentType,
          'content-length': String(Buffer.byteLength(text)),
        });
        response.end(text);
      },
      sendError: (status, message) => sendJson(status, flavor.errorBody(status, message)),
      drop: () => {
        dropped = true;
        request.socket.destroy();
      },
      sleep: (ms) => sleepUnlessAborted(ms, aborter.signal),
    };

    const httpFailure = takeFailure(record.path, true);
    if (httpFailure?.kind === 'http') {
      exchange.sendError(httpFailure.status, httpFailure.message);
      return;
    }
    await flavor.route(exchange);
  };

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // A bug in a fake must fail the test loudly, not hang it: answer 500 with the reason.
      const message = error instanceof Error ? error.message : String(error);
      if (!response.headersSent) {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        response.end(`fake server error: ${message}`);
      } else {
        response.destroy();
      }
    });
  });
  server.keepAliveTimeout = 5000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;

  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    get behavior() {
      return behavior;
    },
    get activeConnections() {
      return sockets.size;
    },
    get activeRequests() {
      return inFlight.size;
    },
    setBehavior(partial) {
      behavior = { ...behavior, ...partial };
      flavor.onBehaviorChange?.(behavior);
    },
    async waitForIdle(timeoutMs = 2000) {
      const deadline = Date.now() + timeoutMs;
      while (inFlight.size > 0) {
        if (Date.now() > deadline) {
          throw new Error(
            `fake server still has ${inFlight.size} request(s) in flight after ${timeoutMs} ms`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        // Destroyed sockets are gone for the caller even before their 'close' events run.
        sockets.clear();
      });
      return closed;
    },
  };
}

/** A token stream in a flavour's framing: chunks written before, per token, and after the tokens. */
export interface StreamPlan {
  contentType: string;
  head: string[];
  tokens: string[];
  tail: string[];
  /** Chunks that report a mid-stream error, after which the response ends. */
  errorChunks: (message: string) => string[];
}

/** Writes one chunk, waiting for 'drain' when the socket buffer is full (fast benchmark streams stay bounded). */
function writeChunk(exchange: FakeExchange, chunk: string): Promise<void> {
  const { response, signal } = exchange;
  if (signal.aborted || response.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    response.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Writes a 200 streaming response chunk by chunk: headers at once, `firstTokenDelayMs` before the first token,
 * `tokenDelayMs` between tokens, and the request's injected failure at `afterTokens`.
 */
export async function playStream(exchange: FakeExchange, plan: StreamPlan): Promise<void> {
  const { response, behavior } = exchange;
  const failure = exchange.takeStreamFailure();
  response.writeHead(200, {
    'content-type': plan.contentType,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
  if (!(await exchange.sleep(behavior.firstTokenDelayMs))) return;
  for (const chunk of plan.head) await writeChunk(exchange, chunk);

  const fail = async (): Promise<void> => {
    if (!failure || failure.kind === 'http') return;
    switch (failure.kind) {
      case 'mid-stream':
        for (const chunk of plan.errorChunks(failure.message)) response.write(chunk);
        response.end();
        return;
      case 'stall':
        // Keeps the connection open without a byte until the client gives up or the server closes.
        await untilAborted(exchange.signal);
        return;
      case 'drop':
        exchange.drop();
        return;
      default: {
        const unreachable: never = failure;
        throw new Error(`unknown failure ${JSON.stringify(unreachable)}`);
      }
    }
  };

  for (let index = 0; index < plan.tokens.length; index += 1) {
    if (failure && failure.kind !== 'http' && failure.afterTokens <= index) return fail();
    if (index > 0 && !(await exchange.sleep(behavior.tokenDelayMs))) return;
    if (exchange.signal.aborted) return;
    await writeChunk(exchange, plan.tokens[index] ?? '');
  }
  if (failure && failure.kind !== 'http') return fail();
  for (const chunk of plan.tail) await writeChunk(exchange, chunk);
  if (!exchange.signal.aborted) response.end();
}

/** Answers a model listing or status call; an injected stall or drop applies to it too. */
export function playListing(exchange: FakeExchange, body: () => unknown): Promise<void> {
  return playBlocking(exchange, 0, body, ['stall', 'drop']);
}

/**
 * Answers a non-streaming generation after the time the tokens would have taken, honouring injected failures:
 * a mid-stream failure becomes an HTTP 500, a stall never answers, a drop destroys the socket.
 */
export async function playBlocking(
  exchange: FakeExchange,
  tokenCount: number,
  body: () => unknown,
  kinds?: StreamFailureKind[],
): Promise<void> {
  const { behavior } = exchange;
  const failure = exchange.takeStreamFailure(kinds);
  const tokens = failure && failure.kind !== 'http' ? Math.min(failure.afterTokens, tokenCount) : tokenCount;
  // No tokens (a listing, or a failure before the first token) means no generation time to wait for.
  const wait = tokens > 0 ? behavior.firstTokenDelayMs + (tokens - 1) * behavior.tokenDelayMs : 0;
  if (!(await exchange.sleep(wait))) return;
  if (!failure || failure.kind === 'http') {
    exchange.sendJson(200, body());
    return;
  }
  switch (failure.kind) {
    case 'mid-stream':
      exchange.sendError(500, failure.message);
      return;
    case 'stall':
      await untilAborted(exchange.signal);
      return;
    case 'drop':
      exchange.drop();
      return;
    default: {
      const unreachable: never = failure;
      throw new Error(`unknown failure ${JSON.stringify(unreachable)}`);
    }
  }
}
