import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { resolveWorkspace } from './workspace-policy.js';

let base: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), 'iop-workspace-')));
  mkdirSync(path.join(base, 'agent'));
  mkdirSync(path.join(base, 'projects', 'one'), { recursive: true });
  mkdirSync(path.join(base, 'home', '.ssh'), { recursive: true });
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

function policy(roots: string[]) {
  return { roots, agentCwd: path.join(base, 'agent'), home: path.join(base, 'home') };
}

function code(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe('resolveWorkspace', () => {
  it('without roots allows only the agent working directory and what lies under it', () => {
    expect(resolveWorkspace('', policy([]))).toBe(path.join(base, 'agent'));
    expect(code(() => resolveWorkspace('/etc', policy([])))).toBe('workspace_not_allowed');
    expect(code(() => resolveWorkspace('/', policy([])))).toBe('workspace_not_allowed');
  });

  it('allows directories under a configured root and refuses /, /etc and ~/.ssh', () => {
    const roots = policy([path.join(base, 'projects')]);
    expect(resolveWorkspace(path.join(base, 'projects', 'one'), roots)).toBe(
      path.join(base, 'projects', 'one'),
    );
    for (const outside of ['/', '/etc', '~/.ssh', path.join(base, 'projects', '..')]) {
      expect(code(() => resolveWorkspace(outside, roots))).toBe('workspace_not_allowed');
    }
  });

  it('resolves symlinks before checking, so a link inside a root cannot point outside it', () => {
    symlinkSync('/etc', path.join(base, 'projects', 'escape'));
    expect(
      code(() =>
        resolveWorkspace(path.join(base, 'projects', 'escape'), policy([path.join(base, 'projects')])),
      ),
    ).toBe('workspace_not_allowed');
  });

  it('expands ~ in roots and workspaces and resolves relative roots against the agent directory', () => {
    expect(resolveWorkspace('~/.ssh', policy(['~']))).toBe(path.join(base, 'home', '.ssh'));
    expect(resolveWorkspace(path.join(base, 'projects', 'one'), policy(['../projects']))).toBe(
      path.join(base, 'projects', 'one'),
    );
  });

  it('reports a missing workspace as workspace_not_found before any root check', () => {
    expect(code(() => resolveWorkspace('/nonexistent/iop', policy([])))).toBe('workspace_not_found');
  });
});
