// Bearer API-key authentication of the OpenAI surface: the Authorization header resolves to the request's
// principal (an `openai.api_keys` entry), to no principal when no key is configured, or to the 401 to answer
// with. The digest comparison itself lives in governance/principal.ts.
import type { Principal, PrincipalResolver } from '../governance/principal.js';
import { OpenAIHttpError } from './openai-error.js';

export function authenticate(
  resolver: PrincipalResolver,
  authorization: string | undefined,
): Principal | undefined | OpenAIHttpError {
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
}
