// The admin API's single error mapper: ServiceError codes (and anything else thrown by a handler) become gRPC
// statuses here and nowhere else. The service code also travels in the `iop-error-code` trailer so the client
// can report it precisely.
import { Metadata, status, type StatusObject } from '@grpc/grpc-js';
import { isServiceError, type ServiceErrorCode } from '../service/errors.js';

export const ERROR_CODE_TRAILER = 'iop-error-code';

const SERVICE_STATUS: Record<ServiceErrorCode, status> = {
  no_nodes: status.UNAVAILABLE,
  node_ambiguous: status.FAILED_PRECONDITION,
  node_not_found: status.NOT_FOUND,
  node_disconnected: status.UNAVAILABLE,
  node_error: status.UNKNOWN,
  invalid_request: status.INVALID_ARGUMENT,
  model_not_found: status.NOT_FOUND,
  no_provider_available: status.UNAVAILABLE,
  queue_full: status.RESOURCE_EXHAUSTED,
  queue_timeout: status.UNAVAILABLE,
  aborted: status.CANCELLED,
  timeout: status.DEADLINE_EXCEEDED,
  shutting_down: status.UNAVAILABLE,
  rate_limited: status.RESOURCE_EXHAUSTED,
  concurrency_limited: status.RESOURCE_EXHAUSTED,
  budget_exhausted: status.RESOURCE_EXHAUSTED,
  parent_not_live: status.PERMISSION_DENIED,
};

/** A gRPC status for a failure, with the edge error code in the trailers. */
export function toGrpcStatus(error: unknown): StatusObject {
  const metadata = new Metadata();
  if (isServiceError(error)) {
    metadata.set(ERROR_CODE_TRAILER, error.code);
    return { code: SERVICE_STATUS[error.code], details: error.message, metadata };
  }
  if (error instanceof AdminCallError) {
    metadata.set(ERROR_CODE_TRAILER, error.errorCode);
    return { code: error.grpcCode, details: error.message, metadata };
  }
  metadata.set(ERROR_CODE_TRAILER, 'internal');
  return { code: status.INTERNAL, details: error instanceof Error ? error.message : String(error), metadata };
}

/** A failure decided by the admin layer itself (bad request, auth, disabled feature). */
export class AdminCallError extends Error {
  override readonly name = 'AdminCallError';

  constructor(
    readonly grpcCode: status,
    readonly errorCode: string,
    message: string,
  ) {
    super(message);
  }
}
