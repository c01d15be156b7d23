// Bearer API-key check for the OpenAI surface. Keys are compared as SHA-256 digests with timingSafeEqual, against
// every configured key without an early exit, so timing reveals neither which key nor how much of one matched.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { OpenAIHttpError } from './openai-error.js';

export function apiKeyAuth(keys: readonly string[]): RequestHandler {
  const check = apiKeyCheck(keys);
  return (request, _response, next) => {
    next(check(request.headers.authorization));
  };
}

/** The same check as a function of the Authorization header: undefined when accepted, else the 401 error. */
export function apiKeyCheck(
  keys: readonly string[],
): (authorization: string | undefined) => OpenAIHttpError | undefined {
  const digests = keys.map(digest);
  return (authorization) => {
    const header = authorization ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    const presented = digest(match?.[1] ?? '');
    let accepted = false;
    for (const expected of digests) accepted = timingSafeEqual(presented, expected) || accepted;
    if (match && accepted) return undefined;
    return new OpenAIHttpError(
      401,
      'authentication_error',
      'invalid_api_key',
      match ? 'Incorrect API key provided' : "Missing API key: send 'Authorization: Bearer <key>'",
    );
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
