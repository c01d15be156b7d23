// One API key's CLI sessions never work in another key's directory. The edge gives every keyed principal session
// ids of its own (`k<digest>.<id>`, @iop/wire session-owner.ts); a new session of one key is refused with
// `workspace_not_allowed` when its workspace is, contains or lies inside the workspace of a live session of
// another key, since an agent working there could read or change that key's files. Sessions of the same key,
// anonymous sessions (operator console/admin, or no keys configured) and keys that all work in the node's default
// workspace (nobody named a directory) are not restricted. The message names only the caller's own directory.
import { sessionOwner } from '@iop/wire';
import { CliAdapterError } from './errors.js';
import { isInside } from './workspace-policy.js';

export interface LiveWorkspace {
  sessionId: string;
  /** The session's real workspace path; undefined when not known. */
  workspace: string | undefined;
}

/**
 * Throws workspace_not_allowed when a new session `sessionId` in `workspace` would share files with a live session
 * of another key. `defaultWorkspace` is the real path a run without a workspace gets.
 */
export function assertOwnWorkspace(
  sessionId: string,
  workspace: string,
  defaultWorkspace: string,
  live: Iterable<LiveWorkspace>,
): void {
  const owner = sessionOwner(sessionId);
  if (owner === '') return;
  for (const other of live) {
    const otherOwner = sessionOwner(other.sessionId);
    if (otherOwner === '' || otherOwner === owner || other.workspace === undefined) continue;
    if (workspace === defaultWorkspace && other.workspace === defaultWorkspace) continue;
    if (isInside(workspace, other.workspace) || isInside(other.workspace, workspace)) {
      throw new CliAdapterError(
        'workspace_not_allowed',
        `workspace ${workspace} overlaps the workspace of a session of another API key; ` +
          'give each key a directory of its own (metadata.workspace)',
      );
    }
  }
}
