import { describe, expect, it } from '@jest/globals';
import { ServiceError, type ServiceErrorCode } from '../service/errors.js';
import { JsonBodyError } from '../surface-kit/json-body.js';
import { modelNotFound, runFailed } from '../surface-kit/surface-error.js';
import { AnthropicHttpError, mapAnthropicError } from './anthropic-error.js';

describe('mapAnthropicError', () => {
  it.each<[ServiceErrorCode, number, string, string | undefined]>([
    ['invalid_request', 400, 'invalid_request_error', undefined],
    ['model_not_found', 404, 'not_found_error', undefined],
    ['queue_full', 429, 'rate_limit_error', '3'],
    ['rate_limited', 429, 'rate_limit_error', '3'],
    ['concurrency_limited', 429, 'rate_limit_error', '3'],
    ['budget_exhausted', 429, 'rate_limit_error', '3'],
    ['queue_timeout', 529, 'overloaded_error', '3'],
    ['no_provider_available', 529, 'overloaded_error', '3'],
    ['no_nodes', 529, 'overloaded_error', '3'],
    ['node_not_found', 529, 'overloaded_error', '3'],
    ['node_ambiguous', 529, 'overloaded_error', '3'],
    ['shutting_down', 529, 'overloaded_error', undefined],
    ['aborted', 499, 'invalid_request_error', undefined],
    ['node_disconnected', 502, 'api_error', undefined],
    ['node_error', 502, 'api_error', undefined],
    ['timeout', 504, 'api_error', undefined],
  ])('maps the service error %s to %i %s', (code, status, type, retryAfter) => {
    const mapped = mapAnthropicError(new ServiceError(code, `said ${code}`, { retryAfterSeconds: 3 }));
    expect(mapped.status).toBe(status);
    expect(mapped.body).toEqual({ type: 'error', error: { type, message: `said ${code}` } });
    expect(mapped.headers['retry-after']).toBe(retryAfter);
    expect(mapped.code).toBe(code);
  });

  it('gives the shared plumbing errors Anthropic types and keeps their status', () => {
    expect(mapAnthropicError(modelNotFound('x')).body.error).toEqual({
      type: 'not_found_error',
      message: "model: 'x' does not exist",
    });
    expect(mapAnthropicError(runFailed('timeout', 'late'))).toMatchObject({
      status: 504,
      body: { error: { type: 'api_error' } },
    });
    expect(mapAnthropicError(runFailed('workspace_not_found', 'no'))).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request_error' } },
    });
    expect(mapAnthropicError(runFailed('backend_http_500', 'boom'))).toMatchObject({
      status: 502,
      body: { error: { type: 'api_error', message: 'boom' } },
      code: 'backend_http_500',
    });
  });

  it('maps body reader failures, its own errors, and anything else to a 500 api_error', () => {
    expect(mapAnthropicError(new JsonBodyError('x', 'entity.parse.failed', 400)).status).toBe(400);
    expect(mapAnthropicError(new JsonBodyError('x', 'entity.too.large', 413)).body.error.type).toBe(
      'request_too_large',
    );
    const own = new AnthropicHttpError(401, 'authentication_error', 'no key', { 'x-a': '1' });
    expect(mapAnthropicError(own)).toMatchObject({ status: 401, headers: { 'x-a': '1' } });
    expect(mapAnthropicError(new Error('bug'))).toMatchObject({
      status: 500,
      body: { type: 'error', error: { type: 'api_error', message: 'The edge failed to handle the request' } },
    });
  });
});
