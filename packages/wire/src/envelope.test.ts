import { describe, expect, it } from '@jest/globals';
import { envelope, envelopeKind } from './envelope.js';
import { CancelAction } from './messages.js';
import { sampleEnvelopes } from './test-support/sample-envelopes.js';

describe('envelope builders', () => {
  it.each(Object.entries(sampleEnvelopes))('builds a %s envelope of that kind', (kind, sample) => {
    expect(envelopeKind(sample)).toBe(kind);
  });

  it('fills unset fields with proto3 defaults', () => {
    const built = envelope.cancelRequest({ runId: 'r' });
    expect(built).toEqual({
      requestId: '',
      msg: {
        $case: 'cancelRequest',
        cancelRequest: {
          action: CancelAction.CANCEL_ACTION_UNSPECIFIED,
          runId: 'r',
          adapter: '',
          target: '',
          sessionId: '',
          reason: '',
        },
      },
    });
  });

  it('puts the correlation id of request/response kinds on the envelope', () => {
    expect(envelope.nodeCommandRequest('c-1', { command: 'status' }).requestId).toBe('c-1');
    expect(envelope.nodeCommandResponse('c-1', { ok: true }).requestId).toBe('c-1');
    expect(envelope.nodeConfigRefreshRequest('c-2', { revision: 'r' }).requestId).toBe('c-2');
    expect(envelope.nodeConfigRefreshResult('c-2', { ok: true }).requestId).toBe('c-2');
    expect(envelope.providerLifecycleProgress('c-3', { status: 'pulling' }).requestId).toBe('c-3');
  });

  it('stamps heartbeats with the current time unless given one', () => {
    const before = Date.now();
    const ping = envelope.heartbeatPing(9);
    expect(ping.msg).toMatchObject({ $case: 'heartbeatPing', heartbeatPing: { seq: 9 } });
    const sentAt = ping.msg?.$case === 'heartbeatPing' ? ping.msg.heartbeatPing.sentAtUnixMs : 0;
    expect(sentAt).toBeGreaterThanOrEqual(before);
    expect(envelope.heartbeatPong(9, 5).msg).toEqual({
      $case: 'heartbeatPong',
      heartbeatPong: { seq: 9, sentAtUnixMs: 5 },
    });
  });

  it('returns undefined as the kind of an envelope without a message', () => {
    expect(envelopeKind({ requestId: '', msg: undefined })).toBeUndefined();
  });
});
