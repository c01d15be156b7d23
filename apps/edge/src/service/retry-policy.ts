// What may be retried before a run's first output, and what counts as output (agent-contract/inner/
// edge-routing-retry.md). Pure functions the run supervisor asks once per terminal part, loss or dispatch error.
//
// Output is what a surface shows the caller: text, reasoning, a tool call, embeddings, and a CLI agent's progress
// (an agent may already have acted in its workspace). `start` and `usage` are metadata and not output: a run
// that sent only those may still be placed again. A dispatch failure is one of the backend or the node that the
// same request may survive elsewhere: the backend unreachable, silent, failing with 5xx or 429 or breaking the
// connection (the node's `upstream_*` codes with `retryable`), the node busy or shutting down, the node lost. A
// client error (400, `unsupported_parameter`, `invalid_request`), a cancel or the run's own deadline is none.
import type { RunEventPart } from '@iop/wire';
import { PlacementError } from '../placement/errors.js';
import type { DispatchFailureReason } from '../placement/outcomes.js';

type ErrorPart = Extract<RunEventPart, { type: 'error' }>;

/** True for a part that reached (or would reach) the caller as output: no retry after it. */
export function isOutput(part: RunEventPart): boolean {
  switch (part.type) {
    case 'text-delta':
    case 'reasoning-delta':
    case 'tool-call':
    case 'embeddings':
    case 'progress':
      return true;
    case 'start':
    case 'usage':
    case 'complete':
    case 'error':
    case 'cancelled':
      return false;
    default: {
      const unreachable: never = part;
      throw new Error(`unknown run event part ${JSON.stringify(unreachable)}`);
    }
  }
}

const HTTP_STATUS = /^upstream_http_(\d{3})$/;

/** The dispatch failure an executor's error part reports; undefined = not one (no retry, not counted). */
export function failureOfPart(part: ErrorPart): DispatchFailureReason | undefined {
  switch (part.code) {
    case 'upstream_unreachable':
      return 'upstream_unreachable';
    case 'upstream_timeout':
      return 'upstream_timeout';
    case 'upstream_error':
      // A broken connection is retryable; a failure the server reported in its body (a bad model name) is not.
      return part.retryable ? 'upstream_error' : undefined;
    case 'node_busy':
    case 'node_shutting_down':
      return 'node_busy';
    case 'node_disconnected':
      return 'node_lost';
    default: {
      const status = HTTP_STATUS.exec(part.code)?.[1];
      if (status === undefined) return undefined;
      const code = Number(status);
      if (code === 429) return 'upstream_429';
      return code >= 500 ? 'upstream_5xx' : undefined;
    }
  }
}

/** The dispatch failure a rejected `dispatch` reports (nothing reached the node); undefined = not one. */
export function failureOfError(error: unknown): DispatchFailureReason | undefined {
  // `node_disconnected`: the node went away before the send, or its link closed or failed under it.
  if (error instanceof PlacementError) return error.code === 'node_disconnected' ? 'node_lost' : undefined;
  return undefined;
}
