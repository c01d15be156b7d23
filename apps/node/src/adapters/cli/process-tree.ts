// Killing a CLI's whole process tree. A CLI starts shells, language servers and tool processes; some leave the
// process group. So on POSIX we signal the group (the leader's pid, since every launch is its own group) and every
// descendant found through the parent links, snapshotted before the first signal: once the leader dies its
// children are re-parented and can no longer be found from it. SIGTERM first, SIGKILL after a grace period.
//
// The snapshot records each process's start time with its pid, and a pid is signalled only while it still belongs
// to the same process: during the grace period a process may exit and its pid be reused by an unrelated one,
// which must never get our SIGKILL. On Windows there are no signals or groups: `taskkill /T` ends the tree
// (politely, then with /F after the grace period), since killing only the `cmd.exe` shim would leave the CLI.
import { systemClock } from '@iop/clock';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessTreeControl {
  /** Sends a signal to the group led by `pid` and to all its descendants. Never throws. */
  signal(pid: number, signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs` to whatever survived; resolves when all are gone (or 2 s later). */
  terminate(pid: number, graceMs: number): Promise<void>;
}

/** A process as seen in one snapshot: its parent and an opaque start stamp (undefined when unknown). */
export interface ProcessEntry {
  parent: number;
  start: string | undefined;
}

export interface ProcessTreeDeps {
  platform?: NodeJS.Platform;
  /** Runs a helper program (`ps`, `taskkill`) and returns its stdout; throws on failure. */
  run?: (file: string, args: string[]) => string;
  /** The process table (default: /proc on Linux, `ps` elsewhere). */
  readTable?: () => Map<number, ProcessEntry>;
  kill?: (pid: number, signal: NodeJS.Signals | 0) => void;
  /** Whether a pid no longer runs (default isProcessGone: absent or a zombie). */
  isGone?: (pid: number) => boolean;
}

export function createProcessTreeControl(deps: ProcessTreeDeps = {}): ProcessTreeControl {
  const platform = deps.platform ?? process.platform;
  const run =
    deps.run ??
    ((file: string, args: string[]) => execFileSync(file, args, { encoding: 'utf8', timeout: 10_000 }));
  const readTable = deps.readTable ?? (() => readProcessTable(platform, run));
  const kill = deps.kill ?? ((pid: number, signal: NodeJS.Signals | 0) => process.kill(pid, signal));
  const isGone = deps.isGone ?? isProcessGone;
  if (platform === 'win32') return windowsTreeControl(run, kill);

  const snapshot = (root: number): Map<number, string | undefined> => {
    const table = readTable();
    const known = new Map<number, string | undefined>([[root, table.get(root)?.start]]);
    for (const pid of descendantsIn(table, root)) known.set(pid, table.get(pid)?.start);
    return known;
  };
  /** Signals the group and each snapshotted pid that still is the process we recorded. */
  const signalKnown = (leader: number, known: Map<number, string | undefined>, signal: NodeJS.Signals) => {
    const table = readTable();
    const same = (pid: number) => {
      const recorded = known.get(pid);
      const current = table.get(pid);
      return current !== undefined && (recorded === undefined || current.start === recorded);
    };
    // The group id stays reserved while any member lives; a leader pid now owned by a different process means
    // our group is gone.
    const leaderNow = table.get(leader);
    if (leaderNow === undefined || same(leader)) quietly(() => kill(-leader, signal));
    for (const pid of known.keys()) if (same(pid)) quietly(() => kill(pid, signal));
  };
  const gone = (known: Map<number, string | undefined>) => {
    const table = readTable();
    return [...known].every(([pid, start]) => {
      const current = table.get(pid);
      return current === undefined || (start !== undefined && current.start !== start) || isGone(pid);
    });
  };
  const waitGone = async (known: Map<number, string | undefined>, timeoutMs: number) => {
    const deadline = systemClock.now() + timeoutMs;
    for (;;) {
      if (gone(known)) return true;
      if (systemClock.now() >= deadline) return false;
      await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 25, { keepAlive: true }));
    }
  };
  return {
    signal: (pid, signal) => signalKnown(pid, snapshot(pid), signal),
    terminate: async (pid, graceMs) => {
      const known = snapshot(pid);
      signalKnown(pid, known, 'SIGTERM');
      if (await waitGone(known, graceMs)) return;
      // Children started during the grace period, found from the survivors.
      const table = readTable();
      for (const survivor of [...known.keys()]) {
        for (const descendant of descendantsIn(table, survivor)) {
          if (!known.has(descendant)) known.set(descendant, table.get(descendant)?.start);
        }
      }
      signalKnown(pid, known, 'SIGKILL');
      await waitGone(known, 2000);
    },
  };
}

function windowsTreeControl(
  run: (file: string, args: string[]) => string,
  kill: (pid: number, signal: NodeJS.Signals | 0) => void,
): ProcessTreeControl {
  const alive = (pid: number) => {
    try {
      kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const taskkill = (pid: number, force: boolean) =>
    quietly(() => run('taskkill', ['/T', ...(force ? ['/F'] : []), '/PID', String(pid)]));
  return {
    signal: (pid, signal) => taskkill(pid, signal === 'SIGKILL' || signal === 'SIGTERM'),
    terminate: async (pid, graceMs) => {
      taskkill(pid, false);
      const deadline = systemClock.now() + graceMs;
      while (alive(pid) && systemClock.now() < deadline)
        await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 25, { keepAlive: true }));
      // /T with /F ends every descendant too; the pid is still the one we started (a live process keeps it).
      if (alive(pid)) taskkill(pid, true);
    },
  };
}

function quietly(action: () => unknown): void {
  try {
    action();
  } catch {
    // Already gone, or not ours to signal.
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

function descendantsIn(table: Map<number, ProcessEntry>, root: number): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, entry] of table) {
    const list = children.get(entry.parent) ?? [];
    list.push(pid);
    children.set(entry.parent, list);
  }
  const found = new Set<number>();
  const queue = [root];
  for (let index = 0; index < queue.length; index += 1) {
    for (const child of children.get(queue[index]) ?? []) {
      if (child === root || found.has(child)) continue;
      found.add(child);
      queue.push(child);
    }
  }
  return [...found];
}

/** pid → parent and start stamp: /proc on Linux (start time in clock ticks), `ps` elsewhere (lstart). */
export function readProcessTable(
  platform: NodeJS.Platform,
  run: (file: string, args: string[]) => string,
): Map<number, ProcessEntry> {
  const table = new Map<number, ProcessEntry>();
  if (platform === 'linux') {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // Fields after the command name (which may contain spaces and parentheses): state ppid ... starttime is
        // field 22 of the whole line, the 20th after the name.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        table.set(Number(entry), { parent: Number(fields[1]), start: fields[19] });
      } catch {
        // The process ended while we looked.
      }
    }
    return table;
  }
  try {
    const output = run('ps', ['-A', '-o', 'pid=,ppid=,lstart=']);
    for (const line of output.split('\n')) {
      const match = /^\s*(\d+)\s+(\d+)\s+(.*\S)\s*$/.exec(line);
      if (match) table.set(Number(match[1]), { parent: Number(match[2]), start: match[3] });
    }
  } catch {
    // Without ps we can still signal the process group.
  }
  return table;
}
