// The node's data directory (run history, lock file): `--data-dir`, else `~/.iop/node`. Created private (0700).
// A pid lock keeps two agents from sharing one directory, since each would mark the other's runs interrupted.
import { systemClock } from '@iop/clock';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  if (flag) return path.resolve(cwd, flag);
  const home = env['HOME'] || env['USERPROFILE'] || os.homedir();
  return path.join(home, '.iop', 'node');
}

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  readonly code = 'data_dir_locked';
}

export interface DataDirLock {
  readonly path: string;
  /** Idempotent. */
  release(): void;
}

/**
 * Takes `<dir>/node.lock` for this process; a lock left by a dead process is taken over.
 *
 * The lock file appears with its pid already in it (written to a private temporary file, then hard-linked into
 * place, which fails if the lock exists), so another starting agent never sees a half-written lock. An empty or
 * unreadable lock younger than `freshMs` is one an older agent is still writing: it is left alone. Taking over a
 * stale lock first moves it aside and checks that what was moved is the stale lock that was judged, so two
 * agents taking over at once cannot both win.
 */
export function lockDataDir(
  dir: string,
  pid: number = process.pid,
  options: { freshMs?: number; now?: () => number } = {},
): DataDirLock {
  const freshMs = options.freshMs ?? 5000;
  const now = options.now ?? (() => systemClock.now());
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dir, 'node.lock');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (createWithContent(lockPath, pid)) return heldLock(lockPath, pid);
    let content: string;
    let modifiedAt: number;
    try {
      content = fs.readFileSync(lockPath, 'utf8');
      modifiedAt = fs.statSync(lockPath).mtimeMs;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const owner = Number(content.trim());
    const parsed = content.trim() !== '' && Number.isInteger(owner) && owner > 0;
    if (!parsed && now() - modifiedAt < freshMs) {
      throw new DataDirLockedError(`data dir ${dir} is being locked by another iop-node (empty ${lockPath})`);
    }
    if (parsed && owner !== pid && isAlive(owner)) {
      throw new DataDirLockedError(`data dir ${dir} is in use by another iop-node (pid ${owner})`);
    }
    takeOverStale(lockPath, content, pid);
  }
  throw new DataDirLockedError(`cannot take the lock ${lockPath}`);
}

/** Creates `lockPath` holding `pid` in one step; false when it already exists. */
function createWithContent(lockPath: string, pid: number): boolean {
  const temporary = `${lockPath}.${pid}.${process.hrtime.bigint()}.tmp`;
  fs.writeFileSync(temporary, `${pid}\n`, { flag: 'wx', mode: 0o600 });
  try {
    fs.linkSync(temporary, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

/** Removes the stale lock whose content was `judged`; puts back a lock that changed owner meanwhile. */
function takeOverStale(lockPath: string, judged: string, pid: number): void {
  const aside = `${lockPath}.stale.${pid}`;
  try {
    fs.renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (fs.readFileSync(aside, 'utf8') !== judged) {
      // Another agent replaced the stale lock between our read and the move: give its lock back.
      try {
        fs.linkSync(aside, lockPath);
      } catch {
        // Someone holds the lock again; the next attempt reads it.
      }
    }
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

function heldLock(lockPath: string, pid: number): DataDirLock {
  let released = false;
  return {
    path: lockPath,
    release: () => {
      if (released) return;
      released = true;
      try {
        if (fs.readFileSync(lockPath, 'utf8').trim() === String(pid)) fs.unlinkSync(lockPath);
      } catch {
        // Already gone: nothing to release.
      }
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
