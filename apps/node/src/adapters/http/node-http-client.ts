// The production HttpClient: node:http / node:https with keep-alive agents. Profiles showed undici's fetch
// (WHATWG streams, AbortSignal/DOMException churn, a new connection setup per call when pooled sockets went
// stale) at ~15 % of the node's CPU per upstream call; a plain request on a pooled socket with the response as a
// Node stream costs a fraction of that.
//
// Lifecycle: the agents live as long as the client; idle pooled sockets are unref'd by node:http (they never keep
// the process alive) and are dropped after `idleSocketMs` (below the common 5 s server keep-alive timeout, so a
// request rarely lands on a socket the server is closing). `close()` destroys every pooled socket.
// Cancellation: aborting the request's signal destroys the request and its socket at once (the backend sees the
// connection close and stops generating); `cancel()` on a response does the same mid-body.
import http from 'node:http';
import https from 'node:https';

import type { HttpClient, HttpClientRequest, HttpClientResponse } from './http-client.js';

/** How long `discard()` waits for the rest of a body before it closes the connection instead. */
const DISCARD_LIMIT_MS = 1000;

export interface NodeHttpClientOptions {
  /** Idle time after which a pooled socket is closed. Default 4000 ms. */
  idleSocketMs?: number;
  /** Most idle sockets kept per origin. Default 256. */
  maxFreeSockets?: number;
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

function abortError(): Error {
  const error = new Error('request aborted');
  error.name = 'AbortError';
  return error;
}

/**
 * The request's headers as a raw name/value list. node:http validates each pair either way, but an object costs a
 * setHeader call per header (and a getHeader lookup for Host and Authorization) on every request; a list is
 * written as given, so Host and the URL's credentials are added here.
 */
function rawHeaders(target: URL, headers: Record<string, string>, body: string | undefined): string[] {
  const list: string[] = [];
  // Names differing only in case are one header, the last one wins (as with setHeader).
  const positions = new Map<string, number>();
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower === 'content-length') continue;
    const position = positions.get(lower);
    if (position === undefined) {
      positions.set(lower, list.length);
      list.push(name, headers[name]);
    } else {
      list[position] = name;
      list[position + 1] = headers[name];
    }
  }
  const host = positions.has('host');
  const authorization = positions.has('authorization');
  // URL.host already brackets IPv6 and leaves out the scheme's default port.
  if (!host) list.push('Host', target.host);
  if (!authorization && (target.username || target.password)) {
    const credentials = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
    list.push('Authorization', `Basic ${Buffer.from(credentials).toString('base64')}`);
  }
  if (body !== undefined) list.push('content-length', String(Buffer.byteLength(body, 'utf8')));
  return list;
}

export function createNodeHttpClient(options: NodeHttpClientOptions = {}): NodeHttpClient {
  const agentOptions: http.AgentOptions = {
    keepAlive: true,
    timeout: options.idleSocketMs ?? 4000,
    maxFreeSockets: options.maxFreeSockets ?? 256,
    scheduling: 'lifo',
  };
  let connectionsOpened = 0;
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);

  function send(target: URL, init: HttpClientRequest, retried: boolean): Promise<HttpClientResponse> {
    return new Promise<HttpClientResponse>((resolve, reject) => {
      if (init.signal.aborted) {
        reject(abortError());
        return;
      }
      const secure = target.protocol === 'https:';
      // Kept a string: node:http writes a string body in one write with the headers (a Buffer body goes out as a
      // second buffer of a writev).
      const body = init.body;
      const request = (secure ? https : http).request({
        protocol: target.protocol,
        hostname: target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname,
        port: target.port || undefined,
        path: `${target.pathname}${target.search}`,
        method: init.method,
        headers: rawHeaders(target, init.headers, body),
        agent: secure ? httpsAgent : httpAgent,
      });
      let answered = false;
      let current: http.IncomingMessage | undefined;
      // Abort handled here rather than with http.request's `signal` option: that one destroys the request with
      // an AbortError even when the response already ended, which surfaced as a stray error after every run.
      const onAbort = (): void => {
        if (!answered) {
          answered = true;
          reject(abortError());
        }
        if (current && !current.complete) current.destroy();
        request.destroy();
      };
      init.signal.addEventListener('abort', onAbort, { once: true });
      request.once('close', () => init.signal.removeEventListener('abort', onAbort));
      request.once('socket', () => {
        if (!request.reusedSocket) connectionsOpened += 1;
      });
      request.once('response', (response) => {
        answered = true;
        current = response;
        // Errors surface through the body iteration; without a listener one arriving before it starts would
        // be an uncaught 'error' event.
        response.on('error', () => undefined);
        let cancelled = false;
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          header: (name) => {
            const value = response.headers[name.toLowerCase()];
            return Array.isArray(value) ? value.join(', ') : value;
          },
          // Leaving the iteration early must not destroy the response: `discard()` may still drain it so the
          // socket returns to the pool (an SSE stream ends its answer with [DONE] just before its last bytes).
          body: { [Symbol.asyncIterator]: () => response.iterator({ destroyOnReturn: false }) },
          cancel: () => {
            if (cancelled || response.readableEnded) return;
            cancelled = true;
            // A half-read response cannot return its socket to the pool: close it so the backend stops.
            response.destroy();
            request.destroy();
          },
          discard: () => {
            if (cancelled || response.readableEnded) return;
            const limit = setTimeout(() => {
              if (cancelled || response.readableEnded) return;
              cancelled = true;
              response.destroy();
              request.destroy();
            }, DISCARD_LIMIT_MS);
            limit.unref();
            response.once('close', () => clearTimeout(limit));
            response.resume();
          },
        });
      });
      // `on`, not `once`: a destroyed request may emit again, and an unheard 'error' would crash the process.
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (answered) return;
        answered = true;
        const stale =
          request.reusedSocket &&
          !retried &&
          !init.signal.aborted &&
          STALE_SOCKET_CODES.has(error.code ?? '');
        init.signal.removeEventListener('abort', onAbort);
        if (stale) {
          send(target, init, true).then(resolve, reject);
          return;
        }
        reject(error);
      });
      request.end(body);
    });
  }

  // An adapter calls the same few URLs on every run: parse each once. Bounded: cleared when it outgrows its size.
  const parsed = new Map<string, URL>();
  return {
    request(url, init) {
      let target = parsed.get(url);
      if (target === undefined) {
        try {
          target = new URL(url);
        } catch (error) {
          return Promise.reject(error instanceof Error ? error : new Error(String(error)));
        }
        if (parsed.size >= MAX_PARSED_URLS) parsed.clear();
        parsed.set(url, target);
      }
      return send(target, init, false);
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
    get connectionsOpened() {
      return connectionsOpened;
    },
  };
}
