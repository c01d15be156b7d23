import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { betterSqliteDriver } from './sqlite-driver.js';
import { HISTORY_FILE_NAME, SqliteRunHistory } from './sqlite-run-history.js';
import { MemoryWorkspaceBindings, SqliteWorkspaceBindings } from './workspace-bindings.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function historyFile(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'iop-bindings-'));
  directories.push(directory);
  return path.join(directory, HISTORY_FILE_NAME);
}

describe('workspace bindings', () => {
  it.each([
    ['in memory', () => new MemoryWorkspaceBindings()],
    ['in SQLite', () => SqliteWorkspaceBindings.open(historyFile(), betterSqliteDriver)],
  ])('%s: the first owner of a directory keeps it', (_name, make) => {
    const bindings = make();
    expect(bindings.bind('/ws/a', 'owner-a')).toBe('owner-a');
    expect(bindings.bind('/ws/a', 'owner-b')).toBe('owner-a');
    expect(bindings.bind('/ws/b', 'owner-b')).toBe('owner-b');
    expect(bindings.list()).toEqual(
      expect.arrayContaining([
        { workspace: '/ws/a', owner: 'owner-a' },
        { workspace: '/ws/b', owner: 'owner-b' },
      ]),
    );
    if (bindings instanceof SqliteWorkspaceBindings) bindings.close();
  });

  it('survives a node restart in the history file, beside the run history', async () => {
    const file = historyFile();
    const history = SqliteRunHistory.open({ path: file });
    const bindings = SqliteWorkspaceBindings.open(file, betterSqliteDriver);
    bindings.bind('/ws/a', 'owner-a');
    history.recordStart({
      runId: 'run-1',
      adapter: 'cli',
      target: 'agent',
      sessionId: 'k0.openai',
      providerId: '',
      background: false,
      startedAt: 1,
    });
    bindings.close();
    bindings.close();
    await history.close();

    const reopenedHistory = SqliteRunHistory.open({ path: file });
    const reopened = SqliteWorkspaceBindings.open(file, betterSqliteDriver);
    expect(reopened.list()).toEqual([{ workspace: '/ws/a', owner: 'owner-a' }]);
    expect(reopened.bind('/ws/a', 'owner-b')).toBe('owner-a');
    expect(reopenedHistory.list().map((run) => run.runId)).toEqual(['run-1']);
    reopened.close();
    await reopenedHistory.close();
  });
});
