// Errors from below the service as the ServiceErrors surfaces map: written once, used by the run supervisor and
// the service's node operations. Placement's errors (which carry the pool's and the node links' refusals too) and
// governance errors never reach a surface.
import type { GovernanceError } from '../governance/errors.js';
import type { PlacementError } from '../placement/errors.js';
import { ServiceError, type ServiceErrorCode } from './errors.js';

/** A limit's refusal; a model outside the allow-list looks like no model at all. */
export function fromGovernanceError(error: GovernanceError): ServiceError {
  if (error.code === 'model_not_allowed') return new ServiceError('model_not_found', error.message);
  return new ServiceError(error.code, error.message, {
    cause: error,
    retryAfterSeconds: error.retryAfterSeconds,
  });
}

/** PlacementError → ServiceError of the same meaning; an owner edge's refusal keeps its code. */
export function fromPlacementError(error: PlacementError): ServiceError {
  const options = {
    cause: error,
    ...(error.details.retryAfterSeconds !== undefined
      ? { retryAfterSeconds: error.details.retryAfterSeconds }
      : {}),
  };
  switch (error.code) {
    case 'node_not_found':
    case 'node_ambiguous':
    case 'no_nodes':
    case 'node_disconnected':
      return new ServiceError(error.code, error.message, options);
    case 'owner_unreachable':
      return new ServiceError('node_disconnected', error.message, options);
    case 'node_outdated':
    case 'node_failed':
      return new ServiceError('node_error', error.message, options);
    case 'node_unavailable':
      return new ServiceError('node_disconnected', error.message, options);
    case 'model_not_found':
    case 'no_provider_available':
    case 'queue_full':
    case 'queue_timeout':
    case 'aborted':
    case 'shutting_down':
      return new ServiceError(error.code, error.message, options);
    case 'node_timeout':
      return new ServiceError('timeout', error.message, options);
    case 'request_refused':
      return new ServiceError('invalid_request', error.message, options);
    case 'refused':
      return new ServiceError(remoteCode(error.details.remoteCode), error.message, options);
    default: {
      const unreachable: never = error.code;
      return new ServiceError('node_error', `unknown placement error ${String(unreachable)}`, options);
    }
  }
}

const SERVICE_CODES: ReadonlySet<string> = new Set<ServiceErrorCode>([
  'no_nodes',
  'node_ambiguous',
  'node_not_found',
  'node_disconnected',
  'node_error',
  'invalid_request',
  'model_not_found',
  'no_provider_available',
  'queue_full',
  'queue_timeout',
  'aborted',
  'timeout',
  'shutting_down',
  'rate_limited',
  'concurrency_limited',
  'budget_exhausted',
]);

/** Another edge's code, when it is one of ours (anything else is that edge's node error). */
function remoteCode(code: string | undefined): ServiceErrorCode {
  return code !== undefined && SERVICE_CODES.has(code) ? (code as ServiceErrorCode) : 'node_error';
}
