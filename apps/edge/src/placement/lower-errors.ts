// The errors of the layers below placement in placement's terms: the pool's refusals and a node link's failures
// become PlacementErrors of the same meaning (placement/errors.ts) where placement calls them, so nothing above
// placement ever sees a PoolError or a NodeLinkError. Anything else passes through unchanged.
import { NodeLinkError } from '../node/errors.js';
import { PoolError } from '../pool/errors.js';
import { PlacementError, type PlacementErrorCode } from './errors.js';

/** A PoolError or NodeLinkError as the PlacementError of the same meaning; any other error as it is. */
export function fromLowerError(error: unknown): unknown {
  if (error instanceof PoolError) {
    return new PlacementError(error.code, error.message, {
      cause: error,
      ...(error.details.model !== undefined ? { model: error.details.model } : {}),
      ...(error.details.retryAfterSeconds !== undefined
        ? { retryAfterSeconds: error.details.retryAfterSeconds }
        : {}),
    });
  }
  if (error instanceof NodeLinkError) {
    return new PlacementError(LINK_CODES[error.code], error.message, { cause: error });
  }
  return error;
}

const LINK_CODES: Record<NodeLinkError['code'], PlacementErrorCode> = {
  link_closed: 'node_disconnected',
  send_failed: 'node_disconnected',
  request_timeout: 'node_timeout',
  request_aborted: 'request_refused',
  duplicate_run: 'request_refused',
};

/**
 * A node operation's failure as a PlacementError: a link failure of the same meaning, anything else a
 * `node_failed` naming the node.
 */
export function nodeOperationError(error: unknown, nodeId: string): PlacementError {
  const lower = fromLowerError(error);
  if (lower instanceof PlacementError) return lower;
  const message = error instanceof Error ? error.message : String(error);
  return new PlacementError('node_failed', `node ${nodeId}: ${message}`, { cause: error });
}
