// Starts an HTTP server for a surface on a `host:port` listen address and closes it completely (including
// keep-alive and streaming connections) on close(). The server carries the shared request timeouts and connection
// cap (`createHttpServer`).
import type http from 'node:http';
import { boundAddress, parseListenAddress } from '../net/listen-address.js';
import { createHttpServer, type HttpServerLimits } from './http-server.js';

export interface HttpListener {
  /** `host:port` actually bound (port 0 resolved). */
  address: string;
  server: http.Server;
  close(): Promise<void>;
}

export async function listenHttp(
  listen: string,
  handler: http.RequestListener,
  limits: Partial<HttpServerLimits> = {},
): Promise<HttpListener> {
  const { host, port } = parseListenAddress(listen);
  return listenServer(createHttpServer(handler, limits), host, port);
}

/** Binds an already built server (e.g. an HTTPS one with the same limits) and wraps it as an HttpListener. */
export async function listenServer(server: http.Server, host: string, port: number): Promise<HttpListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    address: boundAddress(server.address()),
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
