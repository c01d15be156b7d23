// The node's data directory (run history, lock file): `--data-dir`, else `~/.iop/node`. Created private (0700).
// A pid lock keeps two agents from sharing one directory, since each would mark the other's runs interrupted.
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

/** Takes `<dir>/node.lock` for this process; a lock left by a dead process is taken over. */
export function lockDataDir(dir: string, pid: number = process.pid): DataDirLock {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dir, 'node.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      fs.writeFileSync(lockPath, `${pid}\n`, { flag: 'wx', mode: 0o600 });
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
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(fs.readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== pid && isAlive(owner)) {
        throw new DataDirLockedError(`data dir ${dir} is in use by another iop-node (pid ${owner})`);
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new DataDirLockedError(`cannot take the lock ${lockPath}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
