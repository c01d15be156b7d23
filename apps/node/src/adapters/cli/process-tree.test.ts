import { describe, expect, it } from '@jest/globals';
import { createProcessTreeControl, type ProcessEntry } from './process-tree.js';

function table(entries: Array<[number, number, string]>): Map<number, ProcessEntry> {
  return new Map(entries.map(([pid, parent, start]) => [pid, { parent, start }]));
}

describe('process tree control (POSIX)', () => {
  it('never SIGKILLs a snapshotted pid that now belongs to another process', async () => {
    // Leader 100 with child 200; after SIGTERM the child exits and its pid is reused by an unrelated process.
    const before = table([
      [1, 0, 's1'],
      [100, 1, 's100'],
      [200, 100, 's200'],
    ]);
    const after = table([
      [1, 0, 's1'],
      [100, 1, 's100'],
      [200, 1, 'someone-else'],
    ]);
    let current = before;
    const signals: string[] = [];
    const tree = createProcessTreeControl({
      platform: 'linux',
      readTable: () => current,
      isGone: () => false,
      kill: (pid, signal) => {
        if (signal === 0) return;
        signals.push(`${signal} ${pid}`);
        if (signal === 'SIGTERM') current = after;
        if (signal === 'SIGKILL' && pid === 100) current = table([[200, 1, 'someone-else']]);
      },
    });
    await tree.terminate(100, 50);
    expect(signals).toContain('SIGTERM 200');
    expect(signals).toContain('SIGKILL 100');
    expect(signals).toContain('SIGKILL -100');
    expect(signals).not.toContain('SIGKILL 200');
  });

  it('skips the group signal when the leader pid was reused (the group is gone)', () => {
    const signals: string[] = [];
    let reads = 0;
    const tree = createProcessTreeControl({
      platform: 'linux',
      readTable: () => {
        reads += 1;
        return reads === 1 ? table([[100, 1, 'ours']]) : table([[100, 1, 'theirs']]);
      },
      kill: (pid, signal) => void signals.push(`${signal} ${pid}`),
    });
    tree.signal(100, 'SIGINT');
    expect(signals).toEqual([]);
  });
});

describe('process tree control (Windows)', () => {
  it('ends the whole tree with taskkill /T, forcing with /F after the grace period', async () => {
    const commands: string[] = [];
    let alive = true;
    const tree = createProcessTreeControl({
      platform: 'win32',
      run: (file, args) => {
        commands.push([file, ...args].join(' '));
        if (args.includes('/F')) alive = false;
        return '';
      },
      kill: (pid, signal) => {
        if (signal === 0 && !alive) throw Object.assign(new Error('gone'), { code: 'ESRCH' });
      },
    });
    await tree.terminate(4242, 50);
    expect(commands).toEqual(['taskkill /T /PID 4242', 'taskkill /T /F /PID 4242']);
  });

  it('does not force when the tree ended within the grace period', async () => {
    const commands: string[] = [];
    let alive = true;
    const tree = createProcessTreeControl({
      platform: 'win32',
      run: (file, args) => {
        commands.push([file, ...args].join(' '));
        alive = false;
        return '';
      },
      kill: (_pid, signal) => {
        if (signal === 0 && !alive) throw new Error('gone');
      },
    });
    await tree.terminate(7, 1000);
    expect(commands).toEqual(['taskkill /T /PID 7']);
  });
});
