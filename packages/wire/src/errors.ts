// Typed errors of the wire layer. Every failure that crosses the @iop/wire boundary is a WireError with a stable
// `code`, so the transport and the link can map it to a close reason without parsing messages.

import { errorGuard, typedError } from '@iop/errors';

export type WireErrorCode =
  /** A length prefix announced more than maxFrameBytes; nothing was allocated for it. */
  | 'frame_too_large'
  /** A frame's payload is not a valid Envelope (bad protobuf, or no message at all). */
  | 'malformed_frame'
  /** The byte stream ended in the middle of a frame. */
  | 'truncated_frame'
  /** The connection is closed or closing; nothing more can be sent or received. */
  | 'connection_closed'
  /** The socket refused a write (for example EPIPE). */
  | 'write_failed'
  /** The peer broke the protocol's rules (sequence, handshake, message kind in the wrong direction). */
  | 'protocol_violation';

/** Codes caused by what the peer sent: the peer is at fault and retrying the same bytes will not help. */
const PEER_FAULT_CODES: ReadonlySet<WireErrorCode> = new Set([
  'frame_too_large',
  'malformed_frame',
  'truncated_frame',
  'protocol_violation',
]);

export class WireError extends typedError<WireErrorCode>('WireError') {
  /**
   * True when the failure is the network's or the peer's going away (reconnecting may help); false when the peer
   * sent bytes that break the protocol.
   */
  readonly transient: boolean;

  constructor(code: WireErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.transient = !PEER_FAULT_CODES.has(code);
  }
}

export const isWireError = errorGuard(WireError);
