import { describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { create } from '@iop/wire';
import { testPrincipal } from '../governance/test-support/test-principal.js';
import type { RequestContext } from './request-context.js';
import { requestAffinityKey, withCaller, type SurfaceRun } from './surface-run.js';

function context(
  headers: Record<string, string | string[]>,
  extra: Partial<RequestContext> = {},
): RequestContext {
  return {
    request: { headers } as unknown as IncomingMessage,
    response: {} as ServerResponse,
    arrivedAt: 0,
    ...extra,
  };
}

function chatRun(): SurfaceRun {
  return {
    spec: {
      session: { kind: 'slot', baseId: 'openai' },
      messages: [create.chatMessage({ role: 'user', content: 'hi' })],
    },
    caller: { includeReasoning: false },
  };
}

describe('requestAffinityKey', () => {
  it("takes the x-session-id header (trimmed), else the body's own name for the conversation", () => {
    expect(requestAffinityKey('  sess-1 ', 'user-9')).toBe('sess-1');
    expect(requestAffinityKey(['sess-2', 'sess-3'], 'user-9')).toBe('sess-2');
    expect(requestAffinityKey(undefined, 'user-9')).toBe('user-9');
    expect(requestAffinityKey('   ', 'user-9')).toBe('user-9');
  });

  it('has no key when neither names one as a non-empty string, and cuts a long one', () => {
    expect(requestAffinityKey(undefined, undefined)).toBeUndefined();
    expect(requestAffinityKey('', '')).toBeUndefined();
    expect(requestAffinityKey(undefined, 42)).toBeUndefined();
    expect(requestAffinityKey(undefined, 'x'.repeat(5000))).toHaveLength(1024);
  });
});

describe('withCaller', () => {
  it('puts who asked with the caller and the conversation in the spec, in place', () => {
    const principal = testPrincipal();
    const parent = { runId: 'agent-1', nodeId: 'n1' };
    const run = chatRun();
    const spec = run.spec;
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(withCaller(run, context({ traceparent, 'x-session-id': 's-1' }, { principal, parent }), 'u')).toBe(
      run,
    );
    expect(run.spec).toBe(spec);
    expect(run.caller).toEqual({ includeReasoning: false, principal, parent, traceparent });
    expect(spec.affinityKey).toBe('s-1');
  });

  it("falls back to the body's conversation name, and leaves the key unset when there is none", () => {
    const named = withCaller(chatRun(), context({}), 'user-7');
    expect(named.spec.affinityKey).toBe('user-7');
    expect(named.caller).toEqual({ includeReasoning: false, principal: undefined });
    expect('affinityKey' in withCaller(chatRun(), context({}), undefined).spec).toBe(false);
  });
});
