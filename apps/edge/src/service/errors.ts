// Typed errors of the service layer: the only error type surfaces see from below (pool and link errors are
// translated here). Each surface maps these codes to its own wire format in one place.
import { errorGuard, typedError, type FaultTable } from '@iop/errors';

export type ServiceErrorCode =
  | 'no_nodes' // no node is connected
  | 'node_ambiguous' // several nodes are connected and none was chosen
  | 'node_not_found' // the named node is not connected
  | 'node_disconnected' // the node went away while the call was in flight (or while the run was queued)
  | 'node_error' // the node answered with an error
  | 'invalid_request' // the caller's input is wrong
  | 'model_not_found' // no models[] entry with that id
  | 'no_provider_available' // the model has no enabled provider on a connected, healthy node
  | 'queue_full' // no capacity and the queue is full
  | 'queue_timeout' // waited queue_timeout_ms without a free slot
  | 'aborted' // the caller gave up while the run was queued
  | 'timeout'
  | 'shutting_down'
  | 'rate_limited' // the caller's API key is over its rpm or tpm
  | 'concurrency_limited' // the caller's API key has max_concurrent runs in flight
  | 'budget_exhausted' // the caller's API key spent its token budget for the period
  | 'parent_not_live'; // a child run named a parent that is not a live run executing on the node that sent it

const FAULT: FaultTable<ServiceErrorCode> = {
  no_nodes: 'transient',
  node_ambiguous: 'caller',
  node_not_found: 'caller',
  node_disconnected: 'transient',
  node_error: 'transient',
  invalid_request: 'caller',
  model_not_found: 'caller',
  no_provider_available: 'transient',
  queue_full: 'transient',
  queue_timeout: 'transient',
  rate_limited: 'caller',
  concurrency_limited: 'caller',
  budget_exhausted: 'caller',
  parent_not_live: 'caller',
  aborted: 'caller',
  timeout: 'transient',
  shutting_down: 'transient',
};

export interface ServiceErrorOptions {
  cause?: unknown;
  /** When a retry may succeed (capacity errors): the surfaces' Retry-After. */
  retryAfterSeconds?: number;
}

export class ServiceError extends typedError('ServiceError', FAULT) {
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ServiceErrorCode, message: string, options: ServiceErrorOptions = {}) {
    super(code, message, options);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export const isServiceError = errorGuard(ServiceError);
