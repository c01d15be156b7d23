import { describe, expect, it } from '@jest/globals';
import { admitPending, type PendingConnectionView } from './pending-admission.js';

function view(
  handle: string,
  address: string,
  acceptedAtMs: number,
  extra: Partial<PendingConnectionView<string>> = {},
): PendingConnectionView<string> {
  return { handle, address, acceptedAtMs, bytesReceived: 0, registering: false, ...extra };
}

const limits = { maxTotal: 4, maxPerAddress: 2 };

describe('admitPending', () => {
  it('admits below both caps', () => {
    expect(admitPending([view('a', '10.0.0.1', 1)], '10.0.0.1', limits)).toEqual({ action: 'admit' });
  });

  it('evicts the oldest silent connection of the same address at the per-address cap', () => {
    const pending = [
      view('talking', '10.0.0.1', 1, { bytesReceived: 10 }),
      view('silent', '10.0.0.1', 5),
      view('other', '10.0.0.2', 0),
    ];
    expect(admitPending(pending, '10.0.0.1', limits)).toEqual({
      action: 'evict',
      victim: 'silent',
      scope: 'address',
    });
  });

  it('prefers the oldest among equally idle connections', () => {
    const pending = [view('newer', '10.0.0.1', 9), view('older', '10.0.0.1', 3)];
    expect(admitPending(pending, '10.0.0.1', limits)).toMatchObject({ victim: 'older' });
  });

  it('never evicts a connection whose registration is being decided, and refuses when all are', () => {
    const pending = [
      view('a', '10.0.0.1', 1, { registering: true }),
      view('b', '10.0.0.1', 2, { registering: true }),
    ];
    expect(admitPending(pending, '10.0.0.1', limits)).toEqual({ action: 'refuse', scope: 'address' });
  });

  it('at the total cap evicts from the address holding the most pending connections', () => {
    const pending = [
      view('lonely', '10.0.0.9', 0),
      view('flood-1', '10.0.0.1', 2),
      view('flood-2', '10.0.0.1', 3),
      view('other', '10.0.0.2', 1),
    ];
    expect(admitPending(pending, '10.0.0.3', { maxTotal: 4, maxPerAddress: 10 })).toEqual({
      action: 'evict',
      victim: 'flood-1',
      scope: 'total',
    });
  });
});
