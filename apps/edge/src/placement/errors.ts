// Placement errors: why a run could not be placed or sent. The service maps them to ServiceErrors in one place
// (service/run-supervisor.ts); placement itself knows no surface or service error vocabulary.

export type PlacementErrorCode =
  /** An explicit route names a node no edge has. */
  | 'node_not_found'
  /** An alias matches several nodes, or no node was named and several are connected. */
  | 'node_ambiguous'
  /** No node was named and none is connected. */
  | 'no_nodes'
  /** The node went away between admission and dispatch. */
  | 'node_disconnected'
  /** The owner edge left the membership view (or was never in it) before it took the forward: nothing ran there. */
  | 'owner_unreachable'
  /** The node predates what the run needs (a run kind or a request field): upgrade iop-node. */
  | 'node_outdated'
  /** The owner edge refused the run; `remoteCode` is its service error code. */
  | 'refused';

export class PlacementError extends Error {
  override readonly name = 'PlacementError';

  constructor(
    readonly code: PlacementErrorCode,
    message: string,
    readonly details: { remoteCode?: string; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, details.cause !== undefined ? { cause: details.cause } : undefined);
  }
}

export function isPlacementError(error: unknown): error is PlacementError {
  return error instanceof PlacementError;
}
