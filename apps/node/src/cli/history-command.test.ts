import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { SqliteRunHistory } from '../history/sqlite-run-history.js';
import { historyCommand } from './history-command.js';
import { runCli } from './run-cli.js';
import { memoryIo } from './test-support/memory-io.js';

describe('iop-node history', () => {
  let dir: string;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-history-cmd-'));
    const history = SqliteRunHistory.open({ path: path.join(dir, 'history.db') });
    const start = Date.UTC(2026, 0, 2, 3, 4, 5);
    history.recordStart({
      runId: 'run-a',
      adapter: 'cli',
      target: 'fake-cli',
      sessionId: 'default',
      providerId: '',
      background: false,
      startedAt: start,
    });
    history.appendEvent({ runId: 'run-a', seq: 1, type: 'start', payload: {}, at: start });
    history.finish('run-a', { status: 'completed', endedAt: start + 1500, detail: 'idle-timeout' });
    history.recordStart({
      runId: 'run-b',
      adapter: 'ollama',
      target: 'llama3',
      sessionId: 's',
      providerId: 'gpu',
      background: true,
      startedAt: start + 2000,
    });
    history.finish('run-b', {
      status: 'error',
      endedAt: start + 2100,
      detail: '',
      errorCode: 'node_busy',
      errorMessage: 'busy',
    });
    await history.close();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('prints a table of recent runs, newest first', async () => {
    const io = memoryIo({}, dir);
    expect(await runCli(['history', '--data-dir', dir], io, [historyCommand])).toBe(0);
    const lines = io.out().trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^RUN ID\s+STATUS\s+ADAPTER\s+TARGET\s+SESSION\s+STARTED\s+DURATION\s+EVENTS\s+OUTCOME$/,
    );
    expect(lines[1]).toMatch(
      /^run-b\s+error\s+ollama\s+llama3\s+s\s+2026-01-02 03:04:07\s+100ms\s+0\s+node_busy: busy$/,
    );
    expect(lines[2]).toMatch(
      /^run-a\s+completed\s+cli\s+fake-cli\s+default\s+2026-01-02 03:04:05\s+1\.5s\s+1\s+idle-timeout$/,
    );
  });

  it('prints JSON with --json and honours --limit', async () => {
    const io = memoryIo({}, dir);
    expect(await runCli(['history', '--json', '--limit', '1', '--data-dir', dir], io, [historyCommand])).toBe(
      0,
    );
    const runs = JSON.parse(io.out()) as Array<Record<string, unknown>>;
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      run_id: 'run-b',
      status: 'error',
      error_code: 'node_busy',
      duration_ms: 100,
      background: true,
    });
  });

  it('says so when there is no history yet', async () => {
    const io = memoryIo({}, dir);
    const empty = path.join(dir, 'empty');
    expect(await runCli(['history', '--data-dir', empty], io, [historyCommand])).toBe(0);
    expect(io.out()).toBe(`no run history in ${empty}\n`);
  });
});
