// The local user CLI agents run as (`run_as` of the cli adapter): looked up in the system's user database
// (/etc/passwd; uid, gid, HOME). Running agents as a user of their own keeps what the node owns — its token, its
// identity key, its run history, its config, all 0600 in a 0700 data dir — out of reach of a prompt that tells an
// agent to read them. Switching user needs the node to run as root; anything else is a clear error at run time.
import fs from 'node:fs';
import { CliAdapterError } from './errors.js';

export interface AgentUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface AgentUserDeps {
  /** The text of the user database (default: /etc/passwd). */
  readPasswd?: () => string;
  /** This process's effective uid (undefined on Windows). */
  currentUid?: () => number | undefined;
}

/** The `run_as` user, or undefined when agents run as the node's own user. Throws CliAdapterError run_as_unavailable. */
export function resolveAgentUser(runAs: string, deps: AgentUserDeps = {}): AgentUser | undefined {
  if (runAs === '') return undefined;
  const uid = (deps.currentUid ?? (() => process.geteuid?.()))();
  if (uid === undefined) {
    throw new CliAdapterError('run_as_unavailable', `run_as '${runAs}' is not supported on this platform`);
  }
  if (uid !== 0) {
    throw new CliAdapterError(
      'run_as_unavailable',
      `run_as '${runAs}' needs the node to run as root (it runs as uid ${uid})`,
    );
  }
  let passwd: string;
  try {
    passwd = (deps.readPasswd ?? (() => fs.readFileSync('/etc/passwd', 'utf8')))();
  } catch (error) {
    throw new CliAdapterError('run_as_unavailable', `cannot read the user database: ${String(error)}`, {
      cause: error,
    });
  }
  const user = findUser(passwd, runAs);
  if (!user) throw new CliAdapterError('run_as_unavailable', `run_as user '${runAs}' does not exist`);
  if (user.uid === 0) {
    throw new CliAdapterError(
      'run_as_unavailable',
      `run_as user '${runAs}' is root: it would protect nothing`,
    );
  }
  return user;
}

/** The passwd entry `name:x:uid:gid:gecos:home:shell` of `name`. */
export function findUser(passwd: string, name: string): AgentUser | undefined {
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields.length < 7 || fields[0] !== name) continue;
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid < 0 || gid < 0) return undefined;
    return { name, uid, gid, home: fields[5] || '/' };
  }
  return undefined;
}
