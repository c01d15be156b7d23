// Typed errors of the provider pool. Placement turns them into PlacementErrors of the same code (placement/
// lower-errors.ts), the service those into ServiceErrors; surfaces never
// see a PoolError.
import { typedError, type FaultTable } from '@iop/errors';

export type PoolErrorCode =
  | 'model_not_found' // no models[] entry with that id
  | 'no_provider_available' // the model has no enabled provider on a connected, healthy node
  | 'node_unavailable' // an explicit route names a node that is not connected
  | 'queue_full' // every candidate is busy and the model's queue holds max_queue waiters
  | 'queue_timeout' // waited queue_timeout_ms without a free slot
  | 'aborted' // the caller gave up while waiting
  | 'shutting_down'; // the pool was closed

const FAULT: FaultTable<PoolErrorCode> = {
  model_not_found: 'caller',
  no_provider_available: 'transient',
  node_unavailable: 'transient',
  queue_full: 'transient',
  queue_timeout: 'transient',
  aborted: 'caller',
  shutting_down: 'transient',
};

export class PoolError extends typedError('PoolError', FAULT) {
  constructor(
    code: PoolErrorCode,
    message: string,
    readonly details: { model?: string; retryAfterSeconds?: number } = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}
