import { describe, expect, it } from '@jest/globals';

import { joinUrl, openAIApiBase } from './base-url.js';
import { errorMessageFromBody, errorMessageFromEvent } from './error-body.js';

describe('errorMessageFromBody', () => {
  it.each([
    ['{"error":"model \'x\' not found"}', "model 'x' not found"],
    [
      '{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}}',
      'The model `x` does not exist.',
    ],
    ['{"object":"error","message":"flat vllm","type":"BadRequestError","code":400}', 'flat vllm'],
    ['{"detail":"Not Found"}', 'Not Found'],
    ['plain text failure', 'plain text failure'],
    ['', 'HTTP 502'],
  ])('reads %s', (body, expected) => {
    expect(errorMessageFromBody(body, 'HTTP 502')).toBe(expected);
  });

  it('truncates long text bodies', () => {
    expect(errorMessageFromBody('x'.repeat(2000), 'f').length).toBeLessThan(510);
  });
});

describe('errorMessageFromEvent', () => {
  it('finds errors in stream events and ignores normal ones', () => {
    expect(errorMessageFromEvent({ error: 'boom' })).toBe('boom');
    expect(errorMessageFromEvent({ error: { message: 'bad', code: 500 } })).toBe('bad');
    expect(errorMessageFromEvent({ error: { code: 500 } })).toBe('{"code":500}');
    expect(errorMessageFromEvent({ choices: [] })).toBeUndefined();
    expect(errorMessageFromEvent({ error: null })).toBeUndefined();
  });
});

describe('base urls', () => {
  it('joins without double slashes and adds /v1 only when missing', () => {
    expect(joinUrl('http://h:1/', '/api/chat')).toBe('http://h:1/api/chat');
    expect(openAIApiBase('http://h:8000')).toBe('http://h:8000/v1');
    expect(openAIApiBase('http://h:8000/v1/')).toBe('http://h:8000/v1');
  });
});
