import { describe, expect, it } from '@jest/globals';
import { principalSessionId } from '@iop/wire';
import { assertOwnWorkspace } from './workspace-tenancy.js';

const A = principalSessionId('openai', 'tenant-a');
const B = principalSessionId('openai', 'tenant-b');
const DEFAULT = '/srv/agent';

function refusal(run: () => void): { code?: string; message?: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error as { code?: string; message?: string };
  }
}

describe('assertOwnWorkspace', () => {
  it("refuses a key's new session in, above or below another key's workspace, naming only its own path", () => {
    const live = [{ sessionId: A, workspace: '/ws/a' }];
    for (const workspace of ['/ws/a', '/ws', '/ws/a/src']) {
      const error = refusal(() => assertOwnWorkspace(B, workspace, DEFAULT, live));
      expect(error?.code).toBe('workspace_not_allowed');
      expect(error?.message).toContain(workspace);
      if (workspace !== '/ws/a' && workspace !== '/ws/a/src') expect(error?.message).not.toContain('/ws/a');
    }
  });

  it('allows a sibling directory, the same key, anonymous sessions and keys sharing the unnamed default', () => {
    expect(() =>
      assertOwnWorkspace(B, '/ws/b', DEFAULT, [{ sessionId: A, workspace: '/ws/a' }]),
    ).not.toThrow();
    expect(() =>
      assertOwnWorkspace(A, '/ws/a', DEFAULT, [{ sessionId: A, workspace: '/ws/a' }]),
    ).not.toThrow();
    const anonymous = principalSessionId('console', undefined);
    expect(() =>
      assertOwnWorkspace(anonymous, '/ws/a', DEFAULT, [{ sessionId: A, workspace: '/ws/a' }]),
    ).not.toThrow();
    expect(() =>
      assertOwnWorkspace(B, '/ws/a', DEFAULT, [{ sessionId: 'console', workspace: '/ws' }]),
    ).not.toThrow();
    expect(() =>
      assertOwnWorkspace(B, DEFAULT, DEFAULT, [{ sessionId: A, workspace: DEFAULT }]),
    ).not.toThrow();
  });

  it('refuses the default workspace to a key once another key works below it (the agent could read it)', () => {
    const error = refusal(() =>
      assertOwnWorkspace(B, DEFAULT, DEFAULT, [{ sessionId: A, workspace: `${DEFAULT}/a` }]),
    );
    expect(error?.code).toBe('workspace_not_allowed');
  });
});
