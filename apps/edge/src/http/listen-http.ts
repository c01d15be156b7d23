// Starts an HTTP server for a surface on a `host:port` listen address and closes it completely (including
// keep-alive and streaming connections) on close().
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpListener {
  /** `host:port` actually bound (port 0 resolved). */
  address: string;
  server: http.Server;
  close(): Promise<void>;
}

export function parseListenAddress(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen.trim());
  if (!match) throw new Error(`invalid listen address '${listen}': expected host:port`);
  const host = match[1] ?? match[2] ?? '';
  const port = Number(match[3]);
  if (port > 65535) throw new Error(`invalid listen address '${listen}': port out of range`);
  return { host: host === '' ? '0.0.0.0' : host, port };
}

export async function listenHttp(listen: string, handler: http.RequestListener): Promise<HttpListener> {
  const { host, port } = parseListenAddress(listen);
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    address: `${shownHost}:${bound.port.toString()}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
