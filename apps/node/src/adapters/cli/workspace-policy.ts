// Where a CLI run may work. A run's workspace comes from the caller (`metadata.workspace`), and the CLI agents run
// with broad permissions there, so it must lie under one of the adapter's `workspace_roots` after every symlink is
// resolved — `/`, `/etc` or `~/.ssh` are refused with `workspace_not_allowed` unless a root covers them. With no
// roots configured the node agent's working directory is the only root.
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { CliAdapterError } from './errors.js';

export interface WorkspacePolicy {
  /** Configured roots (`~` = HOME, relative = against agentCwd); empty: agentCwd only. */
  roots: readonly string[];
  agentCwd: string;
  home: string | undefined;
}

/** The real path of the requested workspace (empty = agentCwd); throws workspace_not_found / _not_allowed. */
export function resolveWorkspace(requested: string, policy: WorkspacePolicy): string {
  const absolute = path.resolve(policy.agentCwd, expandHome(requested || '.', policy.home));
  let real: string;
  try {
    real = realpathSync(absolute);
    if (!statSync(real).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new CliAdapterError(
      'workspace_not_found',
      `workspace ${absolute} does not exist or is not a directory`,
    );
  }
  const roots = allowedRoots(policy);
  if (!roots.some((root) => isInside(real, root))) {
    throw new CliAdapterError(
      'workspace_not_allowed',
      `workspace ${real} is outside the allowed workspace roots (${roots.join(', ') || 'none'}); ` +
        "set workspace_roots on the node's cli adapter to allow it",
    );
  }
  return real;
}

/** Real paths of the configured roots that exist (a missing root allows nothing). */
export function allowedRoots(policy: WorkspacePolicy): string[] {
  const configured = policy.roots.length > 0 ? policy.roots : ['.'];
  const roots: string[] = [];
  for (const root of configured) {
    try {
      roots.push(realpathSync(path.resolve(policy.agentCwd, expandHome(root, policy.home))));
    } catch {
      // A root that does not exist on this host covers nothing.
    }
  }
  return roots;
}

function expandHome(value: string, home: string | undefined): string {
  if (home === undefined || home === '') return value;
  if (value === '~') return home;
  if (value.startsWith('~/')) return path.join(home, value.slice(2));
  return value;
}

/** True when `candidate` is `root` or lies below it (both real, absolute paths). */
export function isInside(candidate: string, root: string): boolean {
  const relative = path.relative(root, candidate);
  if (relative === '') return true;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}
