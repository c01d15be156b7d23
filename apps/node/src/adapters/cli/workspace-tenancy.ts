// One API key's CLI sessions never work in another key's directory. The edge gives every keyed principal session
// ids of its own (`k<digest>.<id>`, @iop/wire session-owner.ts), and the node reads the key back from them:
// - A run that names no workspace works in its key's own default directory, `.iop-workspaces/k<digest>` under the
//   node's default workspace (the agent's working directory), created on first use with mode 0700 and owned by
//   the agent user when agents run as another user (`run_as`): then the directories are made by that user (a
//   `mkdir` run as it), since a service install's node has neither CAP_CHOWN nor the right to write into the
//   agent's own workspaces directory. Anonymous runs (operator console/admin, or no keys configured) get
//   `.iop-workspaces/anonymous`.
// - A named workspace is bound to the first key whose session works there, across sessions and node restarts
//   (WorkspaceBindings, kept with the run history). A new session of another key is refused with
//   `workspace_not_allowed` when its workspace is, contains or lies inside a bound one, contains the default
//   directories, or lies among them outside its own. The message names only the caller's own directory.
// Anonymous sessions are not restricted and bind nothing, as before keys existed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sessionOwner } from '@iop/wire';
import type { WorkspaceBindings } from '../../history/workspace-bindings.js';
import type { AgentUser } from './agent-user.js';
import { CliAdapterError } from './errors.js';
import { isInside, resolveWorkspace, type WorkspacePolicy } from './workspace-policy.js';

/** The directory of the default workspaces, inside the node's default workspace. */
export const DEFAULT_WORKSPACES_DIR = '.iop-workspaces';
/** The default workspace of anonymous runs, inside DEFAULT_WORKSPACES_DIR. */
export const ANONYMOUS_WORKSPACE = 'anonymous';

/**
 * Creates `directory` with exactly `mode`, as `user` when given (so it is theirs); false when it exists already.
 * Throws when it cannot.
 */
export type MakeDirectory = (directory: string, mode: number, user: AgentUser | undefined) => boolean;

export interface WorkspaceTenancyDeps {
  bindings: WorkspaceBindings;
  /** The `run_as` user: the default directories it works in are made by it, and so are its own. */
  agentUser?: AgentUser;
  /** Default makeDirectory (fs, or `mkdir` run as the agent user). */
  makeDirectory?: MakeDirectory;
}

/** The production MakeDirectory. */
export const makeDirectory: MakeDirectory = (directory, mode, user) => {
  if (fs.existsSync(directory)) return false;
  if (!user) {
    try {
      fs.mkdirSync(directory, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
    // mkdir's mode passes through the umask; the mode is meant exactly.
    fs.chmodSync(directory, mode);
    return true;
  }
  const made = spawnSync('mkdir', ['-m', mode.toString(8), '--', directory], {
    uid: user.uid,
    gid: user.gid,
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 10_000,
  });
  if (made.status === 0) return true;
  if (fs.existsSync(directory)) return false;
  throw new Error(`mkdir as ${user.name} failed: ${made.error?.message ?? String(made.stderr).trim()}`);
};

export class WorkspaceTenancy {
  constructor(private readonly deps: WorkspaceTenancyDeps) {}

  /**
   * The real path a run of `sessionId` works in: the workspace it names (checked against the policy's roots), else
   * its key's default directory, created on first use. Throws workspace_not_found / workspace_not_allowed.
   */
  resolve(sessionId: string, requested: string, policy: WorkspacePolicy): string {
    if (requested !== '') return resolveWorkspace(requested, policy);
    const owner = sessionOwner(sessionId);
    const base = path.join(resolveWorkspace('', policy), DEFAULT_WORKSPACES_DIR);
    // The base only lets agents through (0711): an agent cannot list which keys have directories.
    this.ensureDirectory(base, 0o711);
    const own = path.join(base, owner === '' ? ANONYMOUS_WORKSPACE : `k${owner}`);
    this.ensureDirectory(own, 0o700);
    return own;
  }

  /**
   * Admits a new session of `sessionId` in `workspace` (a real path from resolve): throws workspace_not_allowed
   * when the directory belongs to another key, else binds it to the session's key (anonymous sessions: nothing).
   */
  claim(sessionId: string, workspace: string, policy: WorkspacePolicy): void {
    const owner = sessionOwner(sessionId);
    if (owner === '') return;
    const refuse = () =>
      new CliAdapterError(
        'workspace_not_allowed',
        `workspace ${workspace} is, contains or lies inside the workspace of another API key; ` +
          "name a directory of the key's own (metadata.workspace), or none to work in the key's default one",
      );
    const base = defaultWorkspacesBase(policy);
    if (base !== undefined) {
      const own = path.join(base, `k${owner}`);
      if (isInside(base, workspace)) throw refuse();
      if (isInside(workspace, base) && !isInside(workspace, own)) throw refuse();
    }
    // Check and bind in one turn (both synchronous): two keys cannot both claim one directory.
    for (const binding of this.deps.bindings.list()) {
      if (binding.owner === owner) continue;
      if (isInside(workspace, binding.workspace) || isInside(binding.workspace, workspace)) throw refuse();
    }
    if (this.deps.bindings.bind(workspace, owner) !== owner) throw refuse();
  }

  /** Creates `directory` with `mode` unless it exists; refuses anything but a real directory. */
  private ensureDirectory(directory: string, mode: number): void {
    try {
      (this.deps.makeDirectory ?? makeDirectory)(directory, mode, this.deps.agentUser);
    } catch (error) {
      throw new CliAdapterError(
        'workspace_not_found',
        `cannot create the default workspace ${directory}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    // A symlink planted in its place (by an agent) must not lead a key elsewhere.
    if (!fs.lstatSync(directory).isDirectory())
      throw new CliAdapterError(
        'workspace_not_allowed',
        `the default workspace ${directory} is not a directory (a link or a file): remove it`,
      );
  }
}

/** The real path of the default workspaces' directory, undefined when the node has no default workspace. */
function defaultWorkspacesBase(policy: WorkspacePolicy): string | undefined {
  try {
    return path.join(resolveWorkspace('', policy), DEFAULT_WORKSPACES_DIR);
  } catch {
    return undefined;
  }
}
