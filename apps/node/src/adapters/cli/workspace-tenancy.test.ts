import { afterEach, describe, expect, it } from '@jest/globals';
import { lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { principalDigest, principalSessionId } from '@iop/wire';
import { MemoryWorkspaceBindings } from '../../history/workspace-bindings.js';
import {
  cliInstance,
  collect,
  fakeCliPath,
  request,
  terminal,
  testAdapter,
  texts,
} from './test-support/cli-test-kit.js';
import type { WorkspacePolicy } from './workspace-policy.js';
import {
  ANONYMOUS_WORKSPACE,
  DEFAULT_WORKSPACES_DIR,
  makeDirectory,
  WorkspaceTenancy,
} from './workspace-tenancy.js';

const A = principalSessionId('openai', 'tenant-a');
const A_OTHER_SESSION = principalSessionId('a2a-ctx-2', 'tenant-a');
const B = principalSessionId('openai', 'tenant-b');
const ANONYMOUS = principalSessionId('console', undefined);

let base: string;
let policy: WorkspacePolicy;

function setUp(): void {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), 'iop-tenancy-')));
  // The agent's working directory is the node's default workspace; `ws` holds directories keys name.
  mkdirSync(path.join(base, 'agent'));
  for (const name of ['ws', 'ws/a', 'ws/a/src', 'ws/b']) mkdirSync(path.join(base, name));
  policy = { roots: [base], agentCwd: path.join(base, 'agent'), home: undefined };
}

afterEach(() => rmSync(base, { recursive: true, force: true }));

function refusal(run: () => void): { code?: string; message?: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error as { code?: string; message?: string };
  }
}

const mode = (directory: string) => lstatSync(directory).mode & 0o777;

describe('WorkspaceTenancy.resolve', () => {
  it('gives each key and anonymous runs a default directory of their own (0700, base 0711)', () => {
    setUp();
    const tenancy = new WorkspaceTenancy({ bindings: new MemoryWorkspaceBindings() });
    const defaults = path.join(base, 'agent', DEFAULT_WORKSPACES_DIR);
    const forA = tenancy.resolve(A, '', policy);
    const forB = tenancy.resolve(B, '', policy);
    expect(forA).toBe(path.join(defaults, `k${principalDigest('tenant-a')}`));
    expect(forB).toBe(path.join(defaults, `k${principalDigest('tenant-b')}`));
    expect(tenancy.resolve(A_OTHER_SESSION, '', policy)).toBe(forA);
    expect(tenancy.resolve(ANONYMOUS, '', policy)).toBe(path.join(defaults, ANONYMOUS_WORKSPACE));
    expect([mode(forA), mode(forB), mode(defaults)]).toEqual([0o700, 0o700, 0o711]);
    // A named workspace is only checked against the roots.
    expect(tenancy.resolve(A, path.join(base, 'ws/a'), policy)).toBe(path.join(base, 'ws/a'));
  });

  it("makes a key's default directories as the agent user when agents run as another user", () => {
    setUp();
    const made: Array<[string, string, string | undefined]> = [];
    const agentUser = { name: 'iop-agent', uid: 4242, gid: 4343, home: '/home/iop-agent' };
    const tenancy = new WorkspaceTenancy({
      bindings: new MemoryWorkspaceBindings(),
      agentUser,
      makeDirectory: (directory, mode, user) => {
        made.push([directory, mode.toString(8), user?.name]);
        return makeDirectory(directory, mode, undefined);
      },
    });
    const own = tenancy.resolve(A, '', policy);
    const defaults = path.dirname(own);
    expect(made).toEqual([
      [defaults, '711', 'iop-agent'],
      [own, '700', 'iop-agent'],
    ]);
  });

  it("refuses a link planted in place of a key's default directory", () => {
    setUp();
    const tenancy = new WorkspaceTenancy({ bindings: new MemoryWorkspaceBindings() });
    mkdirSync(path.join(base, 'agent', DEFAULT_WORKSPACES_DIR));
    symlinkSync(
      path.join(base, 'ws/a'),
      path.join(base, 'agent', DEFAULT_WORKSPACES_DIR, `k${principalDigest('tenant-b')}`),
    );
    expect(refusal(() => tenancy.resolve(B, '', policy))?.code).toBe('workspace_not_allowed');
  });
});

describe('WorkspaceTenancy.claim', () => {
  it("refuses another key a named workspace, above or below it, after the first key's session ended", () => {
    setUp();
    const bindings = new MemoryWorkspaceBindings();
    const tenancy = new WorkspaceTenancy({ bindings });
    tenancy.claim(A, path.join(base, 'ws/a'), policy);
    // No session is live now: the binding alone keeps B out, under a new tenancy (a new adapter) too.
    for (const holder of [tenancy, new WorkspaceTenancy({ bindings })]) {
      for (const workspace of ['ws/a', 'ws', 'ws/a/src'].map((name) => path.join(base, name))) {
        const error = refusal(() => holder.claim(B, workspace, policy));
        expect(error?.code).toBe('workspace_not_allowed');
        expect(error?.message).toContain(workspace);
        if (workspace === path.join(base, 'ws')) expect(error?.message).not.toContain('ws/a');
      }
    }
    // The same key, in any session, and a sibling directory for B.
    expect(() => tenancy.claim(A_OTHER_SESSION, path.join(base, 'ws/a/src'), policy)).not.toThrow();
    expect(() => tenancy.claim(B, path.join(base, 'ws/b'), policy)).not.toThrow();
    expect(bindings.list()).toEqual(
      expect.arrayContaining([
        { workspace: path.join(base, 'ws/a'), owner: principalDigest('tenant-a') },
        { workspace: path.join(base, 'ws/b'), owner: principalDigest('tenant-b') },
      ]),
    );
  });

  it("keeps keys out of each other's default directories and out of the directory above them", () => {
    setUp();
    const tenancy = new WorkspaceTenancy({ bindings: new MemoryWorkspaceBindings() });
    const ownA = tenancy.resolve(A, '', policy);
    tenancy.claim(A, ownA, policy);
    mkdirSync(path.join(ownA, 'src'));
    expect(() => tenancy.claim(A_OTHER_SESSION, path.join(ownA, 'src'), policy)).not.toThrow();
    // B names A's default directory (or one inside it), the defaults' directory or the agent's directory above.
    for (const workspace of [
      ownA,
      path.join(ownA, 'src'),
      path.join(base, 'agent', DEFAULT_WORKSPACES_DIR),
      path.join(base, 'agent'),
    ]) {
      expect(refusal(() => tenancy.claim(B, workspace, policy))?.code).toBe('workspace_not_allowed');
    }
  });

  it('lets anonymous sessions anywhere and binds nothing for them', () => {
    setUp();
    const bindings = new MemoryWorkspaceBindings();
    const tenancy = new WorkspaceTenancy({ bindings });
    tenancy.claim(A, path.join(base, 'ws/a'), policy);
    expect(() => tenancy.claim(ANONYMOUS, path.join(base, 'ws'), policy)).not.toThrow();
    expect(() => tenancy.claim(ANONYMOUS, path.join(base, 'ws/b'), policy)).not.toThrow();
    expect(bindings.list()).toHaveLength(1);
    expect(() => tenancy.claim(B, path.join(base, 'ws/b'), policy)).not.toThrow();
  });
});

describe('cli adapter tenancy (fake-cli)', () => {
  // Generous: on a loaded machine the agent's first line may take a while, and idle ends an answer.
  const profile = { command: fakeCliPath, mode: 'persistent', persistent: true, idleTimeoutMs: 2000 };

  it("runs keys without a workspace in different directories; B naming A's after A's session ended is refused", async () => {
    setUp();
    const bindings = new MemoryWorkspaceBindings();
    const instance = cliInstance({ agent: profile }, { workspaceRoots: [base] });
    const adapter = testAdapter(instance, {
      agentCwd: path.join(base, 'agent'),
      workspaceBindings: bindings,
    });
    try {
      const where = async (sessionId: string, workspace = '') =>
        collect(adapter, request('agent', 'where are you?', { sessionId, workspace }));
      const cwdOf = (answer: string) => /CWD (.*)/.exec(answer)?.[1];
      const atA = cwdOf(texts(await where(A)));
      const atB = cwdOf(texts(await where(B)));
      expect(atA).toBe(path.join(base, 'agent', DEFAULT_WORKSPACES_DIR, `k${principalDigest('tenant-a')}`));
      expect(atB).toBe(path.join(base, 'agent', DEFAULT_WORKSPACES_DIR, `k${principalDigest('tenant-b')}`));
      // A works in a named directory, then its session ends.
      const named = path.join(base, 'ws/a');
      expect(cwdOf(texts(await where(A_OTHER_SESSION, named)))).toBe(named);
      expect(await adapter.terminateSession('agent', A_OTHER_SESSION)).toBe(true);
      for (const workspace of [named, atA ?? '']) {
        const refused = terminal(await where(principalSessionId('other', 'tenant-b'), workspace));
        expect(refused).toMatchObject({ type: 'error', code: 'workspace_not_allowed' });
      }
      // Through another adapter sharing the node's bindings (a restart keeps them in the history file) too.
      const next = testAdapter(instance, { agentCwd: path.join(base, 'agent'), workspaceBindings: bindings });
      try {
        const refused = terminal(
          await collect(next, request('agent', 'where are you?', { sessionId: B, workspace: named })),
        );
        expect(refused).toMatchObject({ type: 'error', code: 'workspace_not_allowed' });
      } finally {
        await next.close();
      }
    } finally {
      await adapter.close();
    }
  });
});
