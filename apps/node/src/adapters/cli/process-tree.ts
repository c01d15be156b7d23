// Killing a CLI's whole process tree. A CLI starts shells, language servers and tool processes; some leave the
// process group. So we signal the group (the leader's pid, since every launch is its own group) and every
// descendant found through the parent links, snapshotted before the first signal: once the leader dies its
// children are re-parented and can no longer be found from it. SIGTERM first, SIGKILL after a grace period.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessTreeControl {
  /** Sends a signal to the group led by `pid` and to all its descendants. Never throws. */
  signal(pid: number, signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs` to whatever survived; resolves when all are gone (or 2 s later). */
  terminate(pid: number, graceMs: number): Promise<void>;
}

export function createProcessTreeControl(): ProcessTreeControl {
  return {
    signal: (pid, signal) => {
      signalAll(pid, [pid, ...listDescendants(pid)], signal);
    },
    terminate: async (pid, graceMs) => {
      const known = new Set([pid, ...listDescendants(pid)]);
      signalAll(pid, [...known], 'SIGTERM');
      if (await waitUntilGone([...known], graceMs)) return;
      for (const survivor of [...known])
        for (const descendant of listDescendants(survivor)) known.add(descendant);
      signalAll(pid, [...known], 'SIGKILL');
      await waitUntilGone([...known], 2000);
    },
  };
}

function signalAll(groupLeader: number, pids: number[], signal: NodeJS.Signals): void {
  try {
    process.kill(-groupLeader, signal);
  } catch {
    // No such group (already gone, or the leader was not a group leader).
  }
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/** True when the process no longer runs (absent, or a zombie nobody reaped yet). */
export function isProcessGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  if (process.platform !== 'linux') return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function waitUntilGone(pids: number[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (pids.every(isProcessGone)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** All descendants of `root` (children, grandchildren, ...), from /proc on Linux or `ps` elsewhere. */
export function listDescendants(root: number): number[] {
  const parents = readParentLinks();
  const children = new Map<number, number[]>();
  for (const [pid, parent] of parents) {
    const list = children.get(parent) ?? [];
    list.push(pid);
    children.set(parent, list);
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const current = queue.shift() as number;
    for (const child of children.get(current) ?? []) {
      if (child === root || found.includes(child)) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

function readParentLinks(): Map<number, number> {
  const links = new Map<number, number>();
  if (process.platform === 'linux') {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // Fields after the command name (which may contain spaces and parentheses): state ppid ...
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        links.set(Number(entry), Number(fields[1]));
      } catch {
        // The process ended while we looked.
      }
    }
    return links;
  }
  try {
    const output = execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8', timeout: 5000 });
    for (const line of output.split('\n')) {
      const [pid, parent] = line.trim().split(/\s+/).map(Number);
      if (pid !== undefined && parent !== undefined && Number.isInteger(pid) && Number.isInteger(parent)) {
        links.set(pid, parent);
      }
    }
  } catch {
    // Without ps we can still signal the process group.
  }
  return links;
}
