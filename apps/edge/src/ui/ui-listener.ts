// Where the dashboard listens and how: without `refresh.admin_token` only on loopback (refused otherwise); beyond
// loopback the token crosses the network, so only over HTTPS with the edge's own certificate (`edge.tls`), with
// the request bounds every edge HTTP listener has.
import { readFile } from 'node:fs/promises';
import type http from 'node:http';
import https from 'node:https';
import type { EdgeConfig } from '@iop/config';
import { DEFAULT_HTTP_SERVER_LIMITS } from '../http/http-server.js';
import { listenHttp, listenServer, type HttpListener } from '../http/listen-http.js';
import { isLoopbackHost, parseListenAddress } from '../net/listen-address.js';
import { UiError } from './errors.js';

export interface UiListenPlan {
  token: string;
  /** Present beyond loopback: the edge's certificate and key. */
  tls: { cert: Buffer; key: Buffer } | undefined;
}

/** Checks `ui.listen` against the token and TLS settings and reads the certificate when needed. */
export async function planUiListener(config: EdgeConfig): Promise<UiListenPlan> {
  const listen = parseListenAddress(config.ui.listen, (message) => new UiError('invalid_request', message));
  const token = config.refresh.admin_token;
  if (!token && !isLoopbackHost(listen.host)) {
    throw new UiError(
      'insecure_listen',
      `refusing to serve the dashboard on non-loopback address ${config.ui.listen} without refresh.admin_token`,
    );
  }
  if (isLoopbackHost(listen.host)) return { token, tls: undefined };
  if (!config.edge.tls.enabled) {
    throw new UiError(
      'insecure_listen',
      `refusing to send refresh.admin_token in clear on non-loopback address ${config.ui.listen}: enable edge.tls`,
    );
  }
  const [cert, key] = await Promise.all([
    readFile(config.edge.tls.cert_file),
    readFile(config.edge.tls.key_file),
  ]);
  return { token, tls: { cert, key } };
}

/** Binds the dashboard's handler as planned; a failure is a UiError `listen_failed`. */
export async function listenUi(
  listen: string,
  handler: http.RequestListener,
  tls: UiListenPlan['tls'],
): Promise<HttpListener> {
  try {
    return tls ? await listenHttps(listen, handler, tls) : await listenHttp(listen, handler);
  } catch (error) {
    throw new UiError('listen_failed', `cannot listen on ${listen} for the dashboard: ${String(error)}`, {
      cause: error,
    });
  }
}

/** The dashboard over HTTPS (beyond loopback), with the request bounds every edge HTTP listener has. */
async function listenHttps(
  listen: string,
  handler: http.RequestListener,
  tls: { cert: Buffer; key: Buffer },
): Promise<HttpListener> {
  const { host, port } = parseListenAddress(listen);
  const limits = DEFAULT_HTTP_SERVER_LIMITS;
  const server = https.createServer(
    {
      cert: tls.cert,
      key: tls.key,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  return listenServer(server, host, port);
}
