// Creates the node:http server behind every HTTP surface (OpenAI, A2A, metrics, bootstrap) with the same bounds,
// so none of them can be held open by a slow or idle client: headers must arrive within `headersTimeoutMs`
// (slowloris), the whole request within `requestTimeoutMs`, an idle keep-alive connection is closed after
// `keepAliveTimeoutMs`, and at most `maxConnections` sockets are open at once (more are refused by the kernel
// accept path of node:http). Responses may stream for as long as they like: only the request side is timed.
import http from 'node:http';
import { DEFAULT_MAX_FRAME_BYTES } from '@iop/wire';

export interface HttpServerLimits {
  /** Time allowed for the request line and headers. */
  headersTimeoutMs: number;
  /** Time allowed for the whole request (headers and body). */
  requestTimeoutMs: number;
  /** Idle time after a response before a keep-alive connection is closed. */
  keepAliveTimeoutMs: number;
  /** Open connections at once. */
  maxConnections: number;
  /** How often the server checks the two request timeouts (node:http polls them). */
  checkIntervalMs: number;
}

export const DEFAULT_HTTP_SERVER_LIMITS: Readonly<HttpServerLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1024,
  checkIntervalMs: 1_000,
});

/**
 * Largest request body any surface accepts. A run request travels to the node in one frame, so a body the wire
 * cannot carry is answered 413 at once instead of failing later at the node link; the margin covers the
 * envelope fields around the prompt.
 */
export const MAX_HTTP_BODY_BYTES = DEFAULT_MAX_FRAME_BYTES - 256 * 1024;

export function createHttpServer(
  handler: http.RequestListener,
  limits: Partial<HttpServerLimits> = {},
): http.Server {
  const effective = { ...DEFAULT_HTTP_SERVER_LIMITS, ...limits };
  const server = http.createServer(
    {
      headersTimeout: effective.headersTimeoutMs,
      requestTimeout: Math.max(effective.requestTimeoutMs, effective.headersTimeoutMs),
      keepAliveTimeout: effective.keepAliveTimeoutMs,
      connectionsCheckingInterval: effective.checkIntervalMs,
    },
    handler,
  );
  server.maxConnections = effective.maxConnections;
  return server;
}
