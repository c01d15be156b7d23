// Close reasons carried in Goodbye.reason and reported by FramedConnection.closed. Stable strings: they appear in
// logs, node lifecycle events and the contract (agent-contract/inner/edge-node-runtime-wire.md).

export const CLOSE_REASONS = {
  /** A newer connection of the same node authenticated; the edge closes the older one. */
  replaced: 'replaced',
  /**
   * Another edge of the fabric holds the node now (its authenticated claim is newer): the node reconnects with
   * its usual backoff and failover, never stops for good (unlike `replaced`, a second process on one edge).
   */
  claimedElsewhere: 'claimed-elsewhere',
  /** Deliberate shutdown of the edge or node process. */
  shutdown: 'shutdown',
  /** No frame (ping, pong or any other) arrived within the heartbeat timeout. */
  heartbeatTimeout: 'heartbeat-timeout',
  /** The node sent no register request within edge.register_timeout_ms. */
  registerTimeout: 'register-timeout',
  /** The edge rejected the register request (the response carries the detailed reason). */
  registerRejected: 'register-rejected',
  /** The node was removed from the edge's config by a refresh. */
  nodeRemoved: 'node-removed',
  /** The token this connection registered with was rotated or revoked (`iop-edge node register|revoke`). */
  tokenRevoked: 'token-revoked',
  /** The first frame of a connection was not a register request. */
  protocolViolation: 'protocol_violation',
  /** A connection still in the handshake was closed to make room for a new one (pending-connection caps). */
  evicted: 'evicted',
  /** The peer closed the connection without a Goodbye. */
  peerClosed: 'peer-closed',
} as const;

export type CloseReason = (typeof CLOSE_REASONS)[keyof typeof CLOSE_REASONS];
