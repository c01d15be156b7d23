// Opens the TCP (or TLS) connection to the edge and wraps it in a FramedConnection. Separate from the link so
// tests and other transports can pass their own connect function. With a pinned edge fingerprint the TLS peer's
// public key must match it before the connection is handed to the link, so the token (the link's first frame)
// is never sent to an impostor; without `ca` the pin alone authenticates the edge (a self-signed certificate).
import { systemClock } from '@iop/clock';
import net from 'node:net';
import tls from 'node:tls';
import { fingerprintOfCertificate, FramedConnection, type WireLogger } from '@iop/wire';
import { LinkError } from './link-error.js';

export type ConnectFunction = (signal: AbortSignal) => Promise<FramedConnection>;

export interface DialOptions {
  host: string;
  port: number;
  /**
   * TLS to the edge; `ca` adds trusted roots (PEM) for an edge with a private certificate; `fingerprint`
   * (`sha256:<hex>` of the certificate's SubjectPublicKeyInfo) pins the edge's key.
   */
  tls?: { ca?: string | Buffer; servername?: string; rejectUnauthorized?: boolean; fingerprint?: string };
  connectTimeoutMs?: number;
  maxFrameBytes?: number;
  logger?: WireLogger;
}

/** A ConnectFunction for `host:port`. Rejects with LinkError connect_failed (timeouts and aborts included). */
export function createDialer(options: DialOptions): ConnectFunction {
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  return (signal) =>
    new Promise<FramedConnection>((resolve, reject) => {
      const address = `${options.host}:${options.port}`;
      const socket: net.Socket = options.tls
        ? tls.connect({
            host: options.host,
            port: options.port,
            ca: options.tls.ca,
            servername: options.tls.servername ?? (net.isIP(options.host) ? undefined : options.host),
            // A pin without a CA replaces chain validation (the edge's certificate is self-signed).
            rejectUnauthorized:
              options.tls.rejectUnauthorized ??
              !(options.tls.fingerprint !== undefined && options.tls.ca === undefined),
          })
        : net.connect({ host: options.host, port: options.port });
      const readyEvent = options.tls ? 'secureConnect' : 'connect';
      const cleanup = () => {
        systemClock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        socket.off(readyEvent, onReady);
        socket.off('error', onError);
      };
      const fail = (message: string, cause?: unknown) => {
        cleanup();
        socket.destroy();
        reject(new LinkError('connect_failed', `cannot connect to edge ${address}: ${message}`, { cause }));
      };
      const onReady = () => {
        const pinned = options.tls?.fingerprint;
        if (pinned !== undefined && socket instanceof tls.TLSSocket) {
          const peer = socket.getPeerX509Certificate();
          const presented = peer ? fingerprintOfCertificate(peer) : 'no certificate';
          if (presented !== pinned) {
            cleanup();
            socket.destroy();
            reject(
              new LinkError(
                'edge_identity_mismatch',
                `edge ${address} is not the pinned edge: expected ${pinned}, it presented ${presented}; ` +
                  'the token was not sent (check --edge-fingerprint against `iop-edge env` on the edge host)',
              ),
            );
            return;
          }
        }
        cleanup();
        resolve(
          new FramedConnection(socket, { maxFrameBytes: options.maxFrameBytes, logger: options.logger }),
        );
      };
      const onError = (error: Error) => fail(error.message, error);
      const onAbort = () => fail('aborted');
      const timer = systemClock.setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs, {
        keepAlive: true,
      });
      socket.once(readyEvent, onReady);
      socket.once('error', onError);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
}

/** Parses `host:port` / `[v6]:port`; throws a plain Error naming the problem. */
export function parseEdgeAddress(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`edge address '${value}' is not HOST:PORT`);
  }
  return { host, port };
}
