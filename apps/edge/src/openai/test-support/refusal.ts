// Test support: the OpenAIHttpError a call refuses with (any other error is rethrown; no error at all fails).
import { OpenAIHttpError } from '../openai-error.js';

export function refusal(run: () => unknown): OpenAIHttpError {
  try {
    run();
  } catch (error) {
    if (error instanceof OpenAIHttpError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}
