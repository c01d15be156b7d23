// Typed failures of the node's link to the edge.
import { typedError } from '@iop/errors';

export type LinkErrorCode =
  /** A state change the link's state machine does not allow (a bug). */
  | 'illegal_transition'
  /** TCP/TLS connection to the edge failed. */
  | 'connect_failed'
  /** The TLS peer's key does not match the pinned edge fingerprint (nothing was sent to it). */
  | 'edge_identity_mismatch'
  /** The edge did not answer the register request in time. */
  | 'register_timeout'
  /** The edge refused the registration (reason from the edge). */
  | 'register_rejected'
  /** The edge broke the handshake (first answer not a register response, ...). */
  | 'protocol_violation';

export class LinkError extends typedError<LinkErrorCode>('LinkError') {
  /** connect failures and timeouts may succeed on retry; rejections and bugs will not. */
  readonly transient: boolean;

  constructor(code: LinkErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.transient = code === 'connect_failed' || code === 'register_timeout';
  }
}
