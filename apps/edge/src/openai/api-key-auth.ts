// Bearer API-key check for the OpenAI surface. Keys are compared as SHA-256 digests with timingSafeEqual, against
// every configured key without an early exit, so timing reveals neither which key nor how much of one matched.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { OpenAIHttpError } from './openai-error.js';

export function apiKeyAuth(keys: readonly string[]): RequestHandler {
  const digests = keys.map(digest);
  return (request, _response, next) => {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    const presented = digest(match?.[1] ?? '');
    let accepted = false;
    for (const expected of digests) accepted = timingSafeEqual(presented, expected) || accepted;
    if (match && accepted) {
      next();
      return;
    }
    next(
      new OpenAIHttpError(
        401,
        'authentication_error',
        'invalid_api_key',
        match ? 'Incorrect API key provided' : "Missing API key: send 'Authorization: Bearer <key>'",
      ),
    );
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
