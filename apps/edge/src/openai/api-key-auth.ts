// Bearer API-key check for the OpenAI surface: the Authorization header resolves to a principal (an
// `openai.api_keys` entry) or a 401. The comparison itself lives in governance/principal.ts.
import type { RequestHandler } from 'express';
import type { ApiKeyConfig } from '@iop/config';
import { createPrincipalResolver, type Principal, type PrincipalResolver } from '../governance/principal.js';
import { OpenAIHttpError } from './openai-error.js';

export function apiKeyAuth(keys: readonly ApiKeyConfig[]): RequestHandler {
  const check = apiKeyCheck(keys);
  return (request, _response, next) => {
    next(check(request.headers.authorization));
  };
}

/** The same check as a function of the Authorization header: undefined when accepted, else the 401 error. */
export function apiKeyCheck(
  keys: readonly ApiKeyConfig[],
): (authorization: string | undefined) => OpenAIHttpError | undefined {
  const authenticate = principalCheck(createPrincipalResolver({ keys }));
  return (authorization) => {
    const result = authenticate(authorization);
    return result instanceof OpenAIHttpError ? result : undefined;
  };
}

/**
 * Resolves the Authorization header to the request's principal: the key's principal, undefined when no key is
 * configured (anonymous), or the 401 error to answer with.
 */
export function principalCheck(
  resolver: PrincipalResolver,
): (authorization: string | undefined) => Principal | undefined | OpenAIHttpError {
  return (authorization) => {
    const result = resolver.authenticate(authorization);
    switch (result.kind) {
      case 'open':
        return undefined;
      case 'accepted':
        return result.principal;
      case 'missing':
      case 'invalid':
        return new OpenAIHttpError(
          401,
          'authentication_error',
          'invalid_api_key',
          result.kind === 'invalid'
            ? 'Incorrect API key provided'
            : "Missing API key: send 'Authorization: Bearer <key>'",
        );
      default: {
        const unreachable: never = result;
        return unreachable;
      }
    }
  };
}
