// The node transport: a TCP (or TLS, when edge.tls.enabled) listener on edge.listen. Each accepted socket becomes
// a FramedConnection handed to the ConnectionHandler (node/: handshake, heartbeats, frames → NodeLink). A bad
// connection — garbage, oversize or truncated frames, a wrong token, silence — is closed and logged with its
// reason; it never affects other connections. `stop(reason)` stops accepting, says Goodbye to every connection
// and closes everything. The transport knows nothing of nodes beyond the handler interface.
//
// Until a peer has registered it is held to small bounds: frames of at most `preRegistrationFrameBytes`, a few
// pending connections per remote address and in total (`admitPending`: at a cap the longest-idle pending
// connection is evicted, so idle sockets cannot lock real nodes out), `register_timeout_ms` to register, and a
// per-address budget of warning lines (`WarningLimiter`).
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import tls from 'node:tls';
import type { EdgeConfig } from '@iop/config';
import { CLOSE_REASONS, DEFAULT_MAX_FRAME_BYTES, FramedConnection } from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { AcceptedConnection, ConnectionHandler } from './connection-handler.js';
import { TransportError } from './errors.js';
import { boundAddress, parseListenAddress } from '../net/listen-address.js';
import { admitPending, type PendingConnectionView } from './pending-admission.js';
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
  const maxPending = options.maxPendingConnections ?? 256;
  const maxPendingPerAddress = options.maxPendingPerAddress ?? 16;
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
  interface Tracked {
    connection: AcceptedConnection;
    remoteIp: string;
  }
  const connections = new Set<Tracked>();
  // Connections that may still be in the handshake: a subset of `connections`, pruned as they are seen
  // registered, so admitting a socket costs the number of handshakes in flight, not the number of nodes.
  const unregistered = new Set<Tracked>();
  const tasks = new Set<Promise<void>>();
  let shuttingDown = false;
  const isShuttingDown = (): boolean => shuttingDown;
  const handler = options.handler;

  /** Makes room for a new socket from `address`; false when it must be refused. */
  const admit = (address: string, remote: string): boolean => {
    const pending: PendingConnectionView<AcceptedConnection>[] = [];
    for (const tracked of unregistered) {
      const { connection, remoteIp } = tracked;
      if (connection.registered) {
        unregistered.delete(tracked); // registered for good: a connection never goes back to the handshake
        continue;
      }
      if (closingForRoom.has(connection)) continue;
      pending.push({
        handle: connection,
        address: remoteIp,
        acceptedAtMs: connection.acceptedAtMs,
        bytesReceived: connection.bytesReceived,
        registering: connection.registering,
      });
    }
    const decision = admitPending(pending, address, {
      maxTotal: maxPending,
      maxPerAddress: maxPendingPerAddress,
    });
    const limit =
      decision.action !== 'admit' && decision.scope === 'address' ? maxPendingPerAddress : maxPending;
    switch (decision.action) {
      case 'admit':
        return true;
      case 'evict':
        closingForRoom.add(decision.victim);
        limitWarnings(logger, warnings, address).warn(
          { remoteAddress: remote, reason: CLOSE_REASONS.evicted, scope: decision.scope, limit },
          'too many connections in the handshake: closing the longest-idle one',
        );
        decision.victim
          .close(CLOSE_REASONS.evicted)
          .catch(() => undefined)
          .finally(() => closingForRoom.delete(decision.victim));
        return true;
      case 'refuse':
        limitWarnings(logger, warnings, address).warn(
          { remoteAddress: remote, reason: 'too-many-pending', scope: decision.scope, limit },
          'connection refused: too many connections in the handshake',
        );
        return false;
      default: {
        const unreachable: never = decision;
        throw new Error(`unexpected admission ${JSON.stringify(unreachable)}`);
      }
    }
  };
  const closingForRoom = new Set<AcceptedConnection>();

  const onSocket = (socket: net.Socket) => {
    if (shuttingDown) {
      socket.destroy();
      return;
    }
    const address = socket.remoteAddress ?? 'unknown';
    if (!admit(address, `${address}:${socket.remotePort ?? ''}`)) {
      socket.destroy();
      return;
    }
    const connectionLogger = limitWarnings(logger, warnings, address);
    const framed = new FramedConnection(socket, {
      maxFrameBytes,
      maxIncomingFrameBytes: preRegistrationFrameBytes,
      maxBufferedBytes: preRegistrationFrameBytes,
      ...(options.closeTimeoutMs !== undefined ? { closeTimeoutMs: options.closeTimeoutMs } : {}),
      logger: connectionLogger,
    });
    const connection = handler.accept(framed, {
      remoteIp: address,
      logger: connectionLogger,
      isShuttingDown,
    });
    const tracked: Tracked = { connection, remoteIp: address };
    connections.add(tracked);
    unregistered.add(tracked);
    const task = connection
      .run()
      .catch((error: unknown) => {
        logger.error(
          {
            remoteAddress: framed.remoteAddress,
            error: error instanceof Error ? error.message : String(error),
          },
          'connection handler failed',
        );
        return framed.close('internal-error');
      })
      .finally(() => {
        connections.delete(tracked);
        unregistered.delete(tracked);
        tasks.delete(task);
      });
    tasks.add(task);
  };

  const server = config.edge.tls.enabled
    ? await createTlsServer(config, logger, onSocket, warnings)
    : net.createServer(onSocket);
  server.on('error', (error: Error) =>
    logger.error({ error: error.message }, 'node transport listener error'),
  );

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => {
      reject(
        new TransportError('listen_failed', `cannot listen on ${config.edge.listen}: ${error.message}`, {
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
  const address = boundAddress(server.address());
  logger.info({ address, tls: config.edge.tls.enabled }, 'node transport listening');

  handler.start?.();
  let stopping: Promise<void> | undefined;
  return {
    address,
    get connectionCount() {
      return connections.size;
    },
    stop(reason = 'shutdown') {
      stopping ??= (async () => {
        shuttingDown = true;
        handler.stop?.();
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all(
          [...connections].map(({ connection }) => connection.close(reason).catch(() => undefined)),
        );
        await Promise.all([...tasks]);
        await serverClosed;
        logger.info({ address, reason }, 'node transport stopped');
      })();
      return stopping;
    },
  };
}

/** Largest frame a peer may send before it has registered (a register request is a few hundred bytes). */
export const PRE_REGISTRATION_FRAME_BYTES = 64 * 1024;

async function createTlsServer(
  config: EdgeConfig,
  logger: Logger,
  onSocket: (socket: net.Socket) => void,
  warnings: WarningLimiter,
): Promise<tls.Server> {
  let cert: Buffer;
  let key: Buffer;
  try {
    [cert, key] = await Promise.all([
      readFile(config.edge.tls.cert_file),
      readFile(config.edge.tls.key_file),
    ]);
  } catch (error) {
    throw new TransportError(
      'tls_config',
      `cannot read edge.tls cert_file/key_file: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  let server: tls.Server;
  try {
    server = tls.createServer({ cert, key, minVersion: 'TLSv1.2' }, onSocket);
  } catch (error) {
    throw new TransportError(
      'tls_config',
      `invalid edge.tls certificate or key: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  server.on('tlsClientError', (error, socket) => {
    limitWarnings(logger, warnings, socket.remoteAddress ?? 'unknown').warn(
      {
        remoteAddress: `${socket.remoteAddress ?? 'unknown'}:${socket.remotePort ?? ''}`,
        reason: 'tls-handshake',
        error: error.message,
      },
      'connection closed: TLS handshake failed',
    );
  });
  return server;
}
