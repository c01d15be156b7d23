import { describe, expect, it } from '@jest/globals';
import { JsonBodyError } from '../surface-kit/json-body.js';
import { modelNotFound, runFailed } from '../surface-kit/surface-error.js';
import { mapOpenAIError, OpenAIHttpError } from './openai-error.js';

describe('mapOpenAIError of a failed run', () => {
  it('answers 400 when the node refused what the caller asked for (workspace outside the roots)', () => {
    const mapped = mapOpenAIError(
      runFailed('workspace_not_allowed', 'workspace /etc is outside the allowed workspace roots'),
    );
    expect(mapped.status).toBe(400);
    expect(mapped.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'workspace_not_allowed',
      param: 'metadata.workspace',
    });
  });

  it('keeps 504 for deadlines and 502 for other run failures', () => {
    expect(mapOpenAIError(runFailed('deadline_exceeded', 'late'))).toMatchObject({
      status: 504,
      body: { error: { type: 'timeout_error', code: 'deadline_exceeded' } },
    });
    expect(mapOpenAIError(runFailed('process_exited', 'gone'))).toMatchObject({
      status: 502,
      body: { error: { type: 'upstream_error', code: 'process_exited' } },
    });
  });
});

describe('mapOpenAIError', () => {
  it("gives a missing model OpenAI's shape: 404 invalid_request_error on param model", () => {
    expect(mapOpenAIError(modelNotFound('m'))).toEqual({
      status: 404,
      body: {
        error: {
          message: "The model 'm' does not exist",
          type: 'invalid_request_error',
          param: 'model',
          code: 'model_not_found',
        },
      },
      headers: {},
      code: 'model_not_found',
    });
  });

  it('keeps the type an OpenAIHttpError was raised with, and maps body reader failures', () => {
    const raised = new OpenAIHttpError(401, 'authentication_error', 'invalid_api_key', 'no');
    expect(mapOpenAIError(raised).body.error.type).toBe('authentication_error');
    expect(mapOpenAIError(new JsonBodyError('x', 'entity.too.large', 413))).toMatchObject({
      status: 413,
      body: { error: { type: 'invalid_request_error', code: 'request_too_large' } },
    });
  });
});
