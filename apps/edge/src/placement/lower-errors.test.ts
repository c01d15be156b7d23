import { describe, expect, it } from '@jest/globals';
import { NodeLinkError } from '../node/errors.js';
import { PoolError } from '../pool/errors.js';
import { PlacementError } from './errors.js';
import { fromLowerError, nodeOperationError } from './lower-errors.js';

describe('fromLowerError', () => {
  it('turns a pool refusal into the placement error of the same code, keeping model and retry-after', () => {
    const pool = new PoolError('queue_full', 'busy', { model: 'm', retryAfterSeconds: 3 });
    const placed = fromLowerError(pool);
    expect(placed).toBeInstanceOf(PlacementError);
    expect(placed).toMatchObject({
      code: 'queue_full',
      message: 'busy',
      details: { model: 'm', retryAfterSeconds: 3 },
      cause: pool,
    });
  });

  it('turns a closed or failed link into node_disconnected, and the link refusals into their own codes', () => {
    const code = (error: NodeLinkError) => (fromLowerError(error) as PlacementError).code;
    expect(code(new NodeLinkError('link_closed', 'closed'))).toBe('node_disconnected');
    expect(code(new NodeLinkError('send_failed', 'write failed'))).toBe('node_disconnected');
    expect(code(new NodeLinkError('request_timeout', 'slow'))).toBe('node_timeout');
    expect(code(new NodeLinkError('request_aborted', 'gone'))).toBe('request_refused');
    expect(code(new NodeLinkError('duplicate_run', 'dup'))).toBe('request_refused');
  });

  it('passes any other error through unchanged', () => {
    const other = new Error('boom');
    expect(fromLowerError(other)).toBe(other);
  });
});

describe('nodeOperationError', () => {
  it('names the node when the failure is not a link error', () => {
    expect(nodeOperationError(new Error('boom'), 'n1')).toMatchObject({
      code: 'node_failed',
      message: 'node n1: boom',
    });
    expect(nodeOperationError(new NodeLinkError('request_timeout', 'slow'), 'n1').code).toBe('node_timeout');
  });
});
