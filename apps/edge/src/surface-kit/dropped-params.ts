// The `x-iop-dropped-params` response header: the request fields a `drop_unsupported` model dropped
// (openai/request-fields.ts), named on every answer to that request, an error answer included.
import type { ServerResponse } from 'node:http';
import type { RunCaller } from './surface-run.js';

export const DROPPED_PARAMS_HEADER = 'x-iop-dropped-params';

/** Sets the header when the run dropped fields (comma-separated names); does nothing otherwise. */
export function setDroppedParamsHeader(
  response: ServerResponse,
  caller: Pick<RunCaller, 'droppedParams'>,
): void {
  if (caller.droppedParams) response.setHeader(DROPPED_PARAMS_HEADER, caller.droppedParams.join(','));
}
