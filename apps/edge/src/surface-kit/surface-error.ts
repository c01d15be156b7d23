// The error base of every HTTP surface: what the shared plumbing (route resolution, run output, the body reader)
// raises, and what each surface's own error class extends. A surface keeps its own wire shape (OpenAI
// `{error:{message,type,code,param}}`, Anthropic `{type:'error',error:{type,message}}`): its one mapper turns a
// SurfaceError's status, code and param into that shape.

/** An HTTP failure with its status decided where it is raised; the wire shape is the surface's. */
export class SurfaceError extends Error {
  override readonly name: string = 'SurfaceError';

  constructor(
    readonly status: number,
    /** A stable machine code (`model_not_found`, a run's error code); null when the status says it all. */
    readonly code: string | null,
    message: string,
    /** The request field at fault, if one is. */
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function modelNotFound(model: string): SurfaceError {
  return new SurfaceError(404, 'model_not_found', `The model '${model}' does not exist`, 'model');
}

/**
 * Run error codes that mean the request itself cannot be served (the node refused what the caller asked for):
 * 400, not a gateway failure.
 */
const CALLER_RUN_ERRORS: ReadonlySet<string> = new Set([
  'workspace_not_allowed',
  'workspace_not_found',
  'workspace_mismatch',
  'invalid_session_id',
]);

/** A run that ended with an error part, or an operator cancel, before the response could be produced. */
export function runFailed(code: string, message: string): SurfaceError {
  if (code === 'timeout' || code === 'deadline_exceeded') return new SurfaceError(504, code, message);
  if (CALLER_RUN_ERRORS.has(code)) {
    return new SurfaceError(400, code, message, code.startsWith('workspace') ? 'metadata.workspace' : null);
  }
  return new SurfaceError(502, code || 'upstream_error', message);
}

/** A body the reader refused, as status, code and message (each surface words the type its own way). */
export interface BodyReadFailure {
  status: number;
  code: 'invalid_json' | 'request_too_large' | 'invalid_body';
  message: string;
}

/** The JSON body reader's failures (json-body.ts; express.json() too) carry body-parser's `type` and `status`. */
export function bodyReadFailure(error: unknown): BodyReadFailure | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { type, status } = error as { type?: unknown; status?: unknown };
  if (type === 'entity.parse.failed') {
    return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON' };
  }
  if (type === 'entity.too.large') {
    return { status: 413, code: 'request_too_large', message: 'The request body is too large' };
  }
  if (typeof type === 'string' && typeof status === 'number' && status >= 400 && status < 500) {
    const message = error instanceof Error ? error.message : 'The request body could not be read';
    return { status, code: 'invalid_body', message };
  }
  return undefined;
}
