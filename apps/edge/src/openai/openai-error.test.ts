import { describe, expect, it } from '@jest/globals';
import { runFailed } from './openai-error.js';

describe('runFailed', () => {
  it('answers 400 when the node refused what the caller asked for (workspace outside the roots)', () => {
    const error = runFailed('workspace_not_allowed', 'workspace /etc is outside the allowed workspace roots');
    expect(error).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      code: 'workspace_not_allowed',
      param: 'metadata.workspace',
    });
  });

  it('keeps 504 for deadlines and 502 for other run failures', () => {
    expect(runFailed('deadline_exceeded', 'late').status).toBe(504);
    expect(runFailed('process_exited', 'gone')).toMatchObject({ status: 502, type: 'upstream_error' });
  });
});
