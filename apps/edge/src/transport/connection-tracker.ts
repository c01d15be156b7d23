// The transport's accepted connections from their accept to their end: which are still in the handshake (the
// pending caps, with eviction of the longest-idle one at a cap: pending-admission.ts), each connection's run task
// (a failed handler closes its connection `internal-error`), and closing them all at shutdown.
import { CLOSE_REASONS } from '@iop/wire';
import type { Logger } from '../logging.js';
import type { AcceptedConnection } from './connection-handler.js';
import { admitPending, type PendingConnectionView } from './pending-admission.js';
import { limitWarnings, type WarningLimiter } from './warning-limiter.js';

export interface ConnectionTrackerOptions {
  logger: Logger;
  /** Budget of warning lines per remote address. */
  warnings: WarningLimiter;
  /** Connections allowed in the handshake at once, and per remote address. */
  maxPending: number;
  maxPendingPerAddress: number;
}

interface Tracked {
  connection: AcceptedConnection;
  remoteIp: string;
}

export class ConnectionTracker {
  private readonly connections = new Set<Tracked>();
  // Connections that may still be in the handshake: a subset of `connections`, pruned as they are seen
  // registered, so admitting a socket costs the number of handshakes in flight, not the number of nodes.
  private readonly unregistered = new Set<Tracked>();
  private readonly tasks = new Set<Promise<void>>();
  private readonly closingForRoom = new Set<AcceptedConnection>();

  constructor(private readonly options: ConnectionTrackerOptions) {}

  /** Open connections, registered or not. */
  get size(): number {
    return this.connections.size;
  }

  /** Makes room for a new socket from `address`; false when it must be refused. */
  makeRoom(address: string, remote: string): boolean {
    const { logger, warnings, maxPending, maxPendingPerAddress } = this.options;
    const pending: PendingConnectionView<AcceptedConnection>[] = [];
    for (const tracked of this.unregistered) {
      const { connection, remoteIp } = tracked;
      if (connection.registered) {
        this.unregistered.delete(tracked); // registered for good: a connection never goes back to the handshake
        continue;
      }
      if (this.closingForRoom.has(connection)) continue;
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
        this.closingForRoom.add(decision.victim);
        limitWarnings(logger, warnings, address).warn(
          { remoteAddress: remote, reason: CLOSE_REASONS.evicted, scope: decision.scope, limit },
          'too many connections in the handshake: closing the longest-idle one',
        );
        decision.victim
          .close(CLOSE_REASONS.evicted)
          .catch(() => undefined)
          .finally(() => this.closingForRoom.delete(decision.victim));
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
  }

  /** Tracks a connection from its accept to its end (pending caps, shutdown). */
  track(connection: AcceptedConnection, address: string, remote: string): void {
    const tracked: Tracked = { connection, remoteIp: address };
    this.connections.add(tracked);
    this.unregistered.add(tracked);
    const task = connection
      .run()
      .catch((error: unknown) => {
        this.options.logger.error(
          { remoteAddress: remote, error: error instanceof Error ? error.message : String(error) },
          'connection handler failed',
        );
        return connection.close('internal-error');
      })
      .finally(() => {
        this.connections.delete(tracked);
        this.unregistered.delete(tracked);
        this.tasks.delete(task);
      });
    this.tasks.add(task);
  }

  /** Closes every connection with a Goodbye `reason`; resolves when all of them finished. */
  async closeAll(reason: string): Promise<void> {
    await Promise.all(
      [...this.connections].map(({ connection }) => connection.close(reason).catch(() => undefined)),
    );
    await Promise.all([...this.tasks]);
  }
}
