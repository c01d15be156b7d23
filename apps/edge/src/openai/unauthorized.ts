// The OpenAI surface's 401s: the caller was authenticated by the surface kit (surface-kit/request-context.ts:
// an API key from `openai.api_keys`, or an agent's model call by its run key); this words the refusal.
import type { CallerRefusal } from '../surface-kit/request-context.js';
import { OpenAIHttpError } from './openai-error.js';

export function unauthorized(refusal: CallerRefusal): OpenAIHttpError {
  const message = refusal.modelCall
    ? refusal.reason === 'missing'
      ? "Missing run key: send 'Authorization: Bearer <the run's model_api_key>'"
      : 'Incorrect run key, or its run has ended'
    : refusal.reason === 'missing'
      ? "Missing API key: send 'Authorization: Bearer <key>'"
      : 'Incorrect API key provided';
  return new OpenAIHttpError(401, 'authentication_error', 'invalid_api_key', message);
}
