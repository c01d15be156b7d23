// Typed errors of the admin API: the server's start-up refusals and the client's call failures.
import { errorGuard, typedError, type FaultTable } from '@iop/errors';

export type AdminErrorCode =
  | 'insecure_listen' // non-loopback listen address without refresh.admin_token
  | 'invalid_listen' // refresh.listen is not host:port
  | 'listen_failed' // the port could not be bound
  // client side
  | 'unreachable' // no connection to the admin API
  | 'unauthenticated' // missing or wrong admin token
  | 'unavailable' // the edge refused the call as unavailable (e.g. config refresh disabled)
  | 'call_failed'; // any other gRPC failure; `serviceCode` carries the edge's ServiceError code when known

const FAULT: FaultTable<AdminErrorCode> = {
  insecure_listen: 'caller',
  invalid_listen: 'caller',
  listen_failed: 'transient',
  unreachable: 'transient',
  unauthenticated: 'caller',
  unavailable: 'transient',
  call_failed: 'transient',
};

export class AdminError extends typedError('AdminError', FAULT) {
  /** The edge's ServiceError code (`node_not_found`, ...) when the failure came from the service layer. */
  readonly serviceCode: string | undefined;
  /** The gRPC status code of a failed call. */
  readonly grpcCode: number | undefined;

  constructor(
    code: AdminErrorCode,
    message: string,
    options?: { cause?: unknown; serviceCode?: string; grpcCode?: number },
  ) {
    super(code, message, options);
    this.serviceCode = options?.serviceCode;
    this.grpcCode = options?.grpcCode;
  }
}

export const isAdminError = errorGuard(AdminError);
