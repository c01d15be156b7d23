// The node transport: a TCP (or TLS, when edge.tls.enabled) listener on edge.listen. Each accepted socket becomes
// a FramedConnection handed to the ConnectionHandler (node/: handshake, heartbeats, frames → NodeLink). A bad
// connection — garbage, oversize or truncated frames, a wrong token, silence — is closed and logged with its
// reason; it never affects other connections. `stop(reason)` stops accepting, says Goodbye to every connection
// and closes everything. The transport knows nothing of nodes beyond the handler interface.
//
// Until a peer has registered it is held to small bounds: frames of at most `preRegistrationFrameBytes`, a few
// pending connections per remote address and in total (`admitPending`: at a cap the longest-idle pending
// connection is evicted, so idle sockets cannot lock real nodes out), `register_timeout_ms` to register, and a
// per-address budget of warning lines (`WarningLimiter`). With TLS the listener is a plain TCP server and the
// handshake is run per socket (tls-handshake.ts), so those caps count a socket from its accept, not from the end
// of its handshake, and the handshake itself must finish within `register_timeout_ms`. The accepted connections
// and their caps are kept by connection-tracker.ts.
import net from 'node:net';
import type tls from 'node:tls';
import type { EdgeConfig } from '@iop/config';
import { DEFAULT_MAX_FRAME_BYTES, FramedConnection } from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { AcceptedConnection, ConnectionHandler } from './connection-handler.js';
import { ConnectionTracker } from './connection-tracker.js';
import { TransportError } from './errors.js';
import { boundAddress, parseListenAddress } from '../net/listen-address.js';
import { loadSecureContext } from './secure-context.js';
import { TlsHandshake } from './tls-handshake.js';
import { limitWarnings, WarningLimiter } from './warning-limiter.js';

export interface EdgeTransportOptions {
  config: EdgeConfig;
  /** What each accepted connection becomes (node/node-transport.ts builds the node handler). */
  handler: ConnectionHandler;
  logger: Logger;
  clock?: Clock;
  maxFrameBytes?: number;
  /** Bound of each close step of a connection (Goodbye flush, peer FIN). */
  closeTimeoutMs?: number;
  /**
   * Connections allowed to be in the handshake at once (default 256). At the cap the longest-idle pending
   * connection is evicted for the new one (or the new one refused when all are registering), so a flood of idle
   * sockets cannot exhaust the edge or lock real nodes out.
   */
  maxPendingConnections?: number;
  /** Connections in the handshake per remote address (default 16), same eviction rule. */
  maxPendingPerAddress?: number;
  /** Largest frame accepted before a peer has registered (default 64 KiB). */
  preRegistrationFrameBytes?: number;
  /** Warning lines per remote address per minute (default 20; the rest go to debug and are counted). */
  warningsPerAddressPerMinute?: number;
}

export interface EdgeTransport {
  /** The bound host:port (port 0 resolved). */
  readonly address: string;
  /** Open connections, registered or not. */
  readonly connectionCount: number;
  /** Stops accepting, closes every connection with a Goodbye `reason`, resolves when all are closed. */
  stop(reason?: string): Promise<void>;
}

export async function startEdgeTransport(options: EdgeTransportOptions): Promise<EdgeTransport> {
  const { config, logger } = options;
  const { host, port } = parseListenAddress(
    config.edge.listen,
    (message) => new TransportError('invalid_address', message),
  );
  const clock = options.clock ?? systemClock;
  const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const preRegistrationFrameBytes = Math.min(
    maxFrameBytes,
    options.preRegistrationFrameBytes ?? PRE_REGISTRATION_FRAME_BYTES,
  );
  const warnings = new WarningLimiter({
    perWindow: options.warningsPerAddressPerMinute ?? 20,
    windowMs: 60_000,
    clock,
  });
  const tracker = new ConnectionTracker({
    logger,
    warnings,
    maxPending: options.maxPendingConnections ?? 256,
    maxPendingPerAddress: options.maxPendingPerAddress ?? 16,
  });
  let shuttingDown = false;
  const isShuttingDown = (): boolean => shuttingDown;
  const handler = options.handler;

  /** Wraps a (plain or already secure) socket into a FramedConnection handed to the handler. */
  const frame = (socket: net.Socket, address: string): AcceptedConnection => {
    const connectionLogger = limitWarnings(logger, warnings, address);
    const framed = new FramedConnection(socket, {
      maxFrameBytes,
      maxIncomingFrameBytes: preRegistrationFrameBytes,
      maxBufferedBytes: preRegistrationFrameBytes,
      ...(options.closeTimeoutMs !== undefined ? { closeTimeoutMs: options.closeTimeoutMs } : {}),
      logger: connectionLogger,
    });
    return handler.accept(framed, {
      remoteIp: address,
      logger: connectionLogger,
      isShuttingDown,
    });
  };

  /** Admits an accepted TCP socket against the pending caps; false when it was refused (and destroyed). */
  const admitSocket = (socket: net.Socket): { address: string; remote: string } | undefined => {
    if (shuttingDown) {
      socket.destroy();
      return undefined;
    }
    const address = socket.remoteAddress ?? 'unknown';
    const remote = `${address}:${socket.remotePort ?? ''}`;
    if (!tracker.makeRoom(address, remote)) {
      socket.destroy();
      return undefined;
    }
    return { address, remote };
  };

  const onPlainSocket = (socket: net.Socket) => {
    const admitted = admitSocket(socket);
    if (!admitted) return;
    tracker.track(frame(socket, admitted.address), admitted.address, admitted.remote);
  };

  // TLS: the socket counts against the caps from its accept, before its handshake (tls-handshake.ts), and the
  // handshake gets the register timeout.
  const secureContext = config.edge.tls.enabled ? await loadSecureContext(config) : undefined;
  const onTlsSocket = (context: tls.SecureContext) => (socket: net.Socket) => {
    const admitted = admitSocket(socket);
    if (!admitted) return;
    const { address, remote } = admitted;
    const handshake = new TlsHandshake({
      socket,
      secureContext: context,
      acceptedAtMs: clock.now(),
      handshakeTimeoutMs: config.edge.register_timeout_ms,
      clock,
      accept: (secure) => frame(secure, address),
      onFailure: ({ reason, message }) =>
        limitWarnings(logger, warnings, address).warn(
          { remoteAddress: remote, reason, error: message },
          reason === 'tls-handshake-timeout'
            ? 'connection closed: TLS handshake not finished in time'
            : 'connection closed: TLS handshake failed',
        ),
    });
    tracker.track(handshake, address, remote);
  };

  const server = net.createServer(secureContext ? onTlsSocket(secureContext) : onPlainSocket);
  server.on('error', (error: Error) =>
    logger.error({ error: error.message }, 'node transport listener error'),
  );
  await listen(server, host, port, config.edge.listen);
  const address = boundAddress(server.address());
  logger.info({ address, tls: config.edge.tls.enabled }, 'node transport listening');

  handler.start?.();
  let stopping: Promise<void> | undefined;
  return {
    address,
    get connectionCount() {
      return tracker.size;
    },
    stop(reason = 'shutdown') {
      stopping ??= (async () => {
        shuttingDown = true;
        handler.stop?.();
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        await tracker.closeAll(reason);
        await serverClosed;
        logger.info({ address, reason }, 'node transport stopped');
      })();
      return stopping;
    },
  };
}

/** Largest frame a peer may send before it has registered (a register request is a few hundred bytes). */
export const PRE_REGISTRATION_FRAME_BYTES = 64 * 1024;

/** Binds the listener (typed error naming `listenAddress` when it cannot). */
function listen(server: net.Server, host: string, port: number, listenAddress: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => {
      reject(
        new TransportError('listen_failed', `cannot listen on ${listenAddress}: ${error.message}`, {
          cause: error,
        }),
      );
    };
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
