// Typed errors of the node transport (listener setup). Per-connection problems are not thrown: they close that
// connection with a logged reason and the transport keeps serving others.
import { typedError, type FaultTable } from '@iop/errors';

export type TransportErrorCode = 'invalid_address' | 'listen_failed' | 'tls_config' | 'not_running';

const FAULT: FaultTable<TransportErrorCode> = {
  invalid_address: 'caller',
  listen_failed: 'transient',
  tls_config: 'caller',
  not_running: 'bug',
};

export class TransportError extends typedError('TransportError', FAULT) {}
