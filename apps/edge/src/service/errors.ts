// Typed errors of the service layer. Each surface maps these codes to its own wire format in one place.

export type ServiceErrorCode =
  | 'no_nodes' // no node is connected
  | 'node_ambiguous' // several nodes are connected and none was chosen
  | 'node_not_found' // the named node is not connected
  | 'node_disconnected' // the node went away while the call was in flight
  | 'node_error' // the node answered with an error
  | 'invalid_request' // the caller's input is wrong
  | 'timeout'
  | 'shutting_down';

export type ErrorFault = 'caller' | 'transient' | 'bug';

const FAULT: Record<ServiceErrorCode, ErrorFault> = {
  no_nodes: 'transient',
  node_ambiguous: 'caller',
  node_not_found: 'caller',
  node_disconnected: 'transient',
  node_error: 'transient',
  invalid_request: 'caller',
  timeout: 'transient',
  shutting_down: 'transient',
};

export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: ServiceErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = FAULT[code];
  }
}

export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof ServiceError;
}
