import { describe, expect, it } from '@jest/globals';
import { create, type RunEventPart } from '@iop/wire';
import { PlacementError } from '../placement/errors.js';
import { failureOfError, failureOfPart, isOutput } from './retry-policy.js';

const error = (code: string, retryable = true): Extract<RunEventPart, { type: 'error' }> => ({
  type: 'error',
  code,
  message: code,
  retryable,
  backendMs: 0,
});

describe('retry policy', () => {
  it('counts content, reasoning, tool calls, embeddings and progress as output; start and usage are not', () => {
    const parts: RunEventPart[] = [
      { type: 'start', sessionId: 's', adapter: 'a', target: 't' },
      { type: 'usage', usage: create.usage({ promptTokens: 1 }) },
      { type: 'text-delta', text: 'x' },
      { type: 'reasoning-delta', text: 'x' },
      { type: 'progress', kind: 'tool', message: 'reading', fields: {} },
    ];
    expect(parts.map(isOutput)).toEqual([false, false, true, true, true]);
  });

  it('classifies the backend and node failures a run may survive elsewhere', () => {
    expect(failureOfPart(error('upstream_unreachable'))).toBe('upstream_unreachable');
    expect(failureOfPart(error('upstream_timeout'))).toBe('upstream_timeout');
    expect(failureOfPart(error('upstream_error'))).toBe('upstream_error');
    expect(failureOfPart(error('upstream_http_503'))).toBe('upstream_5xx');
    expect(failureOfPart(error('upstream_http_500'))).toBe('upstream_5xx');
    expect(failureOfPart(error('upstream_http_429'))).toBe('upstream_429');
    expect(failureOfPart(error('node_busy'))).toBe('node_busy');
    expect(failureOfPart(error('node_shutting_down'))).toBe('node_busy');
    expect(failureOfPart(error('node_disconnected'))).toBe('node_lost');
  });

  it('never retries client errors, a failure the server reported, the deadline or an agent failure', () => {
    for (const code of [
      'upstream_http_400',
      'upstream_http_404',
      'invalid_request',
      'run_timeout',
      'cli_error',
    ]) {
      expect(failureOfPart(error(code))).toBeUndefined();
    }
    expect(failureOfPart(error('upstream_error', false))).toBeUndefined();
  });

  it('classifies a dispatch that never reached the node as node_lost', () => {
    expect(failureOfError(new PlacementError('node_disconnected', 'gone'))).toBe('node_lost');
    expect(failureOfError(new PlacementError('request_refused', 'dup'))).toBeUndefined();
    expect(failureOfError(new PlacementError('node_timeout', 'slow'))).toBeUndefined();
    expect(failureOfError(new PlacementError('queue_full', 'busy'))).toBeUndefined();
    expect(failureOfError(new PlacementError('owner_unreachable', 'no edge'))).toBeUndefined();
    expect(failureOfError(new Error('boom'))).toBeUndefined();
  });
});
