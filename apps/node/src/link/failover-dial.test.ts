import { describe, expect, it } from '@jest/globals';
import type { FramedConnection } from '@iop/wire';
import type { ConnectFunction } from './dial.js';
import { createFailoverDialer } from './failover-dial.js';
import { LinkError } from './link-error.js';

/** A dialer that succeeds or fails as `up()` says, and counts its attempts. */
function edge(name: string, up: () => boolean) {
  const state = { attempts: 0 };
  const dial: ConnectFunction = () => {
    state.attempts++;
    return up()
      ? Promise.resolve({ name } as unknown as FramedConnection)
      : Promise.reject(new LinkError('connect_failed', `cannot connect to edge ${name}: refused`));
  };
  return { dial, state };
}

const signal = new AbortController().signal;

describe('createFailoverDialer', () => {
  it('keeps the edge that worked, and moves to the next one when it goes away', async () => {
    let aUp = true;
    const a = edge('a', () => aUp);
    const b = edge('b', () => true);
    const dialer = createFailoverDialer([a.dial, b.dial]);
    expect(await dialer.connect(signal)).toEqual({ name: 'a' });
    expect(await dialer.connect(signal)).toEqual({ name: 'a' });
    aUp = false;
    // One attempt reaches b.
    expect(await dialer.connect(signal)).toEqual({ name: 'b' });
    expect(dialer.current).toBe(1);
    aUp = true;
    // b stays first while it answers.
    expect(await dialer.connect(signal)).toEqual({ name: 'b' });
    expect(a.state.attempts).toBe(3);
  });

  it('fails one attempt with every edge named when none answers', async () => {
    const dialer = createFailoverDialer([edge('a', () => false).dial, edge('b', () => false).dial]);
    const error = await dialer.connect(signal).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LinkError);
    expect((error as LinkError).code).toBe('connect_failed');
    expect((error as LinkError).message).toMatch(/edge a: refused.*edge b: refused/);
  });

  it('does not try other edges after an identity mismatch', async () => {
    const b = edge('b', () => true);
    const impostor: ConnectFunction = () =>
      Promise.reject(new LinkError('edge_identity_mismatch', 'edge a is not the pinned edge'));
    const dialer = createFailoverDialer([impostor, b.dial]);
    await expect(dialer.connect(signal)).rejects.toMatchObject({ code: 'edge_identity_mismatch' });
    expect(b.state.attempts).toBe(0);
  });

  it('with one address passes its error through unchanged', async () => {
    const original = new LinkError('connect_failed', 'cannot connect to edge a: refused');
    const dialer = createFailoverDialer([() => Promise.reject(original)]);
    await expect(dialer.connect(signal)).rejects.toBe(original);
  });
});
