// The node transport: a TCP (or TLS, when edge.tls.enabled) listener on edge.listen. Each accepted socket becomes
// a FramedConnection driven by a NodeConnection (handshake, heartbeats, frames → NodeLink). A bad connection —
// garbage, oversize or truncated frames, a wrong token, silence — is closed and logged with its reason; it never
// affects other connections. `stop(reason)` stops accepting, says Goodbye to every node and closes everything.
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import tls from 'node:tls';
import type { EdgeConfig } from '@iop/config';
import { FramedConnection, type NodeConfigPayload } from '@iop/wire';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import { payloadForNode } from '../node/mapper.js';
import type { NodeRegistry } from '../node/node-registry.js';
import type { NodeStore } from '../node/node-store.js';
import { TransportError } from './errors.js';
import { boundAddress, parseListenAddress } from '../net/listen-address.js';
import { NodeConnection } from './node-connection.js';

export interface EdgeTransportOptions {
  config: EdgeConfig;
  store: NodeStore;
  registry: NodeRegistry;
  events: EventBus;
  logger: Logger;
  clock?: () => number;
  /** Payload sent to an accepted node; default: mapped from `config.nodes` (default payload for store-only ids). */
  payloadFor?: (nodeId: string) => NodeConfigPayload;
  maxFrameBytes?: number;
  /** Timeout of node commands and refreshes on each link. */
  requestTimeoutMs?: number;
  /** Bound of each close step of a connection (Goodbye flush, peer FIN). */
  closeTimeoutMs?: number;
  /**
   * Connections allowed to be in the handshake at once (default 256). More are closed at once and logged, so a
   * flood of idle sockets cannot exhaust the edge while registered nodes keep working.
   */
  maxPendingConnections?: number;
  /** Called with the wire error code whenever a connection is closed for bad frames (metrics). */
  onFrameError?: (code: string) => void;
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
  const clock = options.clock ?? Date.now;
  const maxPending = options.maxPendingConnections ?? 256;
  const connections = new Set<NodeConnection>();
  const tasks = new Set<Promise<void>>();
  let shuttingDown = false;

  const context = {
    edgeId: config.edge.id,
    store: options.store,
    registry: options.registry,
    events: options.events,
    logger,
    clock,
    registerTimeoutMs: config.edge.register_timeout_ms,
    heartbeatIntervalMs: config.edge.heartbeat_interval_ms,
    heartbeatTimeoutMs: config.edge.heartbeat_timeout_ms,
    requestTimeoutMs: options.requestTimeoutMs,
    payloadFor: options.payloadFor ?? ((nodeId: string) => payloadForNode(config.nodes, nodeId)),
    isShuttingDown: () => shuttingDown,
    onFrameError: options.onFrameError ?? (() => undefined),
  };

  const onSocket = (socket: net.Socket) => {
    if (shuttingDown) {
      socket.destroy();
      return;
    }
    const pending = [...connections].filter((connection) => connection.nodeLink === undefined).length;
    if (pending >= maxPending) {
      logger.warn(
        {
          remoteAddress: `${socket.remoteAddress ?? 'unknown'}:${socket.remotePort ?? ''}`,
          reason: 'too-many-pending',
          limit: maxPending,
        },
        'connection refused: too many connections in the handshake',
      );
      socket.destroy();
      return;
    }
    const framed = new FramedConnection(socket, {
      ...(options.maxFrameBytes !== undefined ? { maxFrameBytes: options.maxFrameBytes } : {}),
      ...(options.closeTimeoutMs !== undefined ? { closeTimeoutMs: options.closeTimeoutMs } : {}),
      logger,
    });
    const connection = new NodeConnection(framed, context);
    connections.add(connection);
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
        connections.delete(connection);
        tasks.delete(task);
      });
    tasks.add(task);
  };

  const server = config.edge.tls.enabled
    ? await createTlsServer(config, logger, onSocket)
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

  let stopping: Promise<void> | undefined;
  return {
    address,
    get connectionCount() {
      return connections.size;
    },
    stop(reason = 'shutdown') {
      stopping ??= (async () => {
        shuttingDown = true;
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all(
          [...connections].map((connection) => connection.close(reason).catch(() => undefined)),
        );
        await Promise.all([...tasks]);
        await serverClosed;
        logger.info({ address, reason }, 'node transport stopped');
      })();
      return stopping;
    },
  };
}

async function createTlsServer(
  config: EdgeConfig,
  logger: Logger,
  onSocket: (socket: net.Socket) => void,
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
    logger.warn(
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
