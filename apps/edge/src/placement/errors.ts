// Placement errors: why a run could not be placed or sent, or a node operation failed. Everything below placement
// (the pool's PoolError, a node link's NodeLinkError) is translated into these where placement calls it
// (lower-errors.ts), so the service maps one vocabulary to ServiceErrors (service/run-errors.ts); placement itself
// knows no surface or service error vocabulary.

import { errorGuard, typedError } from '@iop/errors';

export type PlacementErrorCode =
  /** An explicit route names a node no edge has. */
  | 'node_not_found'
  /** An alias matches several nodes, or no node was named and several are connected. */
  | 'node_ambiguous'
  /** No node was named and none is connected. */
  | 'no_nodes'
  /** The node went away between admission and dispatch, or its link closed under a request. */
  | 'node_disconnected'
  /** The owner edge left the membership view (or was never in it) before it took the forward: nothing ran there. */
  | 'owner_unreachable'
  /** The node predates what the run needs (a run kind or a request field): upgrade iop-node. */
  | 'node_outdated'
  /** The owner edge refused the run; `remoteCode` is its service error code. */
  | 'refused'
  // The pool's refusals while taking capacity here (same meaning as PoolErrorCode):
  /** No models[] entry with that id. */
  | 'model_not_found'
  /** The model has no enabled provider on a connected, healthy node. */
  | 'no_provider_available'
  /** An explicit route names a node that is not connected (at reserve: nothing was sent). */
  | 'node_unavailable'
  /** Every candidate is busy and the model's queue holds max_queue waiters. */
  | 'queue_full'
  /** Waited queue_timeout_ms without a free slot. */
  | 'queue_timeout'
  /** The caller gave up while waiting. */
  | 'aborted'
  /** The pool was closed. */
  | 'shutting_down'
  // A node link's answers to a request (a run or a node command):
  /** The node did not answer in time. */
  | 'node_timeout'
  /** The node link refused the request (aborted by its caller, a run id already running there). */
  | 'request_refused'
  /** Anything else a node operation threw; the message names the node. */
  | 'node_failed';

export interface PlacementErrorDetails {
  remoteCode?: string;
  retryAfterSeconds?: number;
  /** The model a pool refusal is about. */
  model?: string;
  cause?: unknown;
}

export class PlacementError extends typedError<PlacementErrorCode>('PlacementError') {
  constructor(
    code: PlacementErrorCode,
    message: string,
    readonly details: PlacementErrorDetails = {},
  ) {
    super(code, message, details);
  }
}

export const isPlacementError = errorGuard(PlacementError);
