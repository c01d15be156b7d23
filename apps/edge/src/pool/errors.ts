// Typed errors of the provider pool. Surfaces map `code` to their wire format (the OpenAI surface: 404/429/503).
import type { ErrorFault } from '../service/errors.js';

export type PoolErrorCode =
  | 'model_not_found' // no models[] entry with that id
  | 'no_provider_available' // the model has no enabled provider on a connected, healthy node
  | 'queue_full' // every candidate is busy and the model's queue holds max_queue waiters
  | 'queue_timeout' // waited queue_timeout_ms without a free slot
  | 'aborted' // the caller gave up while waiting
  | 'shutting_down'; // the pool was closed

const FAULT: Record<PoolErrorCode, ErrorFault> = {
  model_not_found: 'caller',
  no_provider_available: 'transient',
  queue_full: 'transient',
  queue_timeout: 'transient',
  aborted: 'caller',
  shutting_down: 'transient',
};

export class PoolError extends Error {
  override readonly name = 'PoolError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: PoolErrorCode,
    message: string,
    readonly details: { model?: string; retryAfterSeconds?: number } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = FAULT[code];
  }
}

export function isPoolError(error: unknown): error is PoolError {
  return error instanceof PoolError;
}
