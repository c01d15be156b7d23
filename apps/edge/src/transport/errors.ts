// Typed errors of the node transport (listener setup). Per-connection problems are not thrown: they close that
// connection with a logged reason and the transport keeps serving others.
import type { ErrorFault } from '../fault.js';

export type TransportErrorCode = 'invalid_address' | 'listen_failed' | 'tls_config' | 'not_running';

const FAULT: Record<TransportErrorCode, ErrorFault> = {
  invalid_address: 'caller',
  listen_failed: 'transient',
  tls_config: 'caller',
  not_running: 'bug',
};

export class TransportError extends Error {
  override readonly name = 'TransportError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: TransportErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = FAULT[code];
  }
}
