// The one JSON request body reader of the HTTP surfaces, without body-parser (raw-body, iconv, type-is per
// request were a visible share of the edge's CPU). It accepts only what it can read exactly like express.json()
// does (`isPlainJsonRequest`: application/json, UTF-8, no content-encoding); the OpenAI surface hands anything
// else to express.json. Failures carry the same `type`/`status` fields as body-parser's errors, so every
// surface's error mapper answers both alike (surface-error.ts `bodyReadFailure`: invalid_json 400,
// request_too_large 413, invalid_body 4xx).
import type { IncomingMessage } from 'node:http';

/** A body failure shaped like body-parser's (`type` + `status`), for `bodyReadFailure`. */
export class JsonBodyError extends Error {
  override readonly name = 'JsonBodyError';
  readonly code = 'invalid_body';

  constructor(
    message: string,
    readonly type: 'entity.parse.failed' | 'entity.too.large' | 'request.aborted',
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Whether express.json() would parse this request as plain UTF-8 JSON (so reading it here is equivalent). */
export function isPlainJsonRequest(request: IncomingMessage): boolean {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  const contentType = request.headers['content-type'];
  if (contentType === undefined) return false;
  // What clients send almost always: decided without splitting.
  if (contentType === 'application/json') return true;
  const [mediaType, ...parameters] = contentType.split(';');
  if (mediaType.trim().toLowerCase() !== 'application/json') return false;
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() !== 'charset') continue;
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}

/** How a surface wants its body read beyond the byte limit. */
export interface JsonBodyOptions {
  /**
   * An empty (or all-whitespace) body is `{}`, as express.json reads it (default true); false = it is not JSON
   * (JSON-RPC, whose empty request is a parse error).
   */
  emptyAsObject?: boolean;
}

/**
 * The parsed body; `{}` when empty (as express.json, unless `emptyAsObject` is false). Strict like body-parser:
 * the JSON must be an object or an array. Rejects at once when the declared length exceeds `limit`, or when the
 * bytes read do.
 */
export function readJsonBody(
  request: IncomingMessage,
  limit: number,
  options: JsonBodyOptions = {},
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'] ?? Number.NaN);
    const tooLarge = () => new JsonBodyError('request entity too large', 'entity.too.large', 413);
    if (declared > limit) {
      // Drain instead of reading: the client gets its answer, the connection stays usable.
      request.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('aborted', onAborted);
    };
    const fail = (error: JsonBodyError) => {
      if (settled) return;
      settled = true;
      cleanup();
      request.resume();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        fail(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (settled) return;
      settled = true;
      cleanup();
      const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length)).toString('utf8');
      try {
        resolve(parseStrict(text, options.emptyAsObject ?? true));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const onError = (error: Error) =>
      fail(new JsonBodyError('request aborted', 'request.aborted', 400, { cause: error }));
    const onAborted = () => fail(new JsonBodyError('request aborted', 'request.aborted', 400));
    // `on`, not `once` (no wrapper per listener): cleanup() removes all four, `settled` makes repeats no-ops.
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('aborted', onAborted);
  });
}

function parseStrict(text: string, emptyAsObject: boolean): unknown {
  const start = text.search(/\S/);
  if (start === -1) {
    if (emptyAsObject) return {};
    throw new JsonBodyError('Empty JSON body', 'entity.parse.failed', 400);
  }
  const first = text[start];
  if (first !== '{' && first !== '[') {
    throw new JsonBodyError('Unexpected token in JSON body', 'entity.parse.failed', 400);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new JsonBodyError('Invalid JSON body', 'entity.parse.failed', 400, { cause: error });
  }
}
