// What the transport hands an accepted, framed connection to, and what it needs back. The transport owns the
// listener, TLS and the bounds before registration (frame size, pending connections per address, eviction);
// the layer above (node/: registration, NodeLink, heartbeats, registry) owns what the connection becomes.
import type { FramedConnection } from '@iop/wire';
import type { Logger } from '../logging.js';

/** One accepted connection as the transport tracks it (for pending-connection limits and shutdown). */
export interface AcceptedConnection {
  /** When the socket was accepted (oldest-idle eviction). */
  readonly acceptedAtMs: number;
  /** Bytes the peer has sent so far. */
  readonly bytesReceived: number;
  /** The first frame arrived and the registration is being decided (never evicted). */
  readonly registering: boolean;
  /** Registered: no longer counted as pending. */
  readonly registered: boolean;
  /** Drives the connection to its end; resolves when everything about it was cleaned up. */
  run(): Promise<void>;
  /** Closes with a Goodbye `reason`; `run()` then finishes. */
  close(reason: string): Promise<void>;
}

export interface AcceptContext {
  /** Remote IP (no port): the key of the per-address limits. */
  remoteIp: string;
  /** The connection's logger (its warning lines are budgeted per address). */
  logger: Logger;
  /** True once the transport is stopping (registrations are refused). */
  isShuttingDown(): boolean;
}

export interface ConnectionHandler {
  accept(connection: FramedConnection, context: AcceptContext): AcceptedConnection;
  /** Called once the listener is up / when it stops (periodic work such as token re-checks). */
  start?(): void;
  stop?(): void;
}
