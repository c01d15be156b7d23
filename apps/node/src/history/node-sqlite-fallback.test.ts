import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { HistoryError } from './history-error.js';
import { defaultHistoryProbes, openRunHistory } from './node-sqlite-fallback.js';
import { isNodeSqliteAvailable } from './sqlite-driver.js';

describe('openRunHistory', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-history-select-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('uses better-sqlite3 when its addon loads in this process', async () => {
    expect(defaultHistoryProbes.betterSqliteError()).toBeUndefined();
    const opened = openRunHistory({ path: path.join(dir, 'history.db') });
    expect(opened.backend).toBe('better-sqlite3');
    expect(opened.fallbackReason).toBeUndefined();
    opened.history.recordStart({
      runId: 'r1',
      adapter: 'cli',
      target: 't',
      sessionId: 's',
      providerId: '',
      background: false,
      startedAt: 1,
    });
    expect(opened.history.list()[0]?.runId).toBe('r1');
    await opened.history.close();
  });

  it('names both causes when better-sqlite3 does not load and node:sqlite is missing', () => {
    const probes = {
      betterSqliteError: () => new Error('Could not locate the bindings file.\n → tried ...'),
      nodeSqliteAvailable: () => false,
    };
    let thrown: unknown;
    try {
      openRunHistory({ path: path.join(dir, 'history.db') }, probes);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(HistoryError);
    expect(thrown).toMatchObject({ code: 'open_failed' });
    expect((thrown as Error).message).toContain('Could not locate the bindings file.');
    expect((thrown as Error).message).not.toContain('tried');
    expect((thrown as Error).message).toContain('node:sqlite needs Node 22.13');
  });

  it('falls back to node:sqlite when better-sqlite3 does not load (the release runtime)', async () => {
    const probes = { betterSqliteError: () => new Error('wrong ABI'), nodeSqliteAvailable: () => true };
    if (!isNodeSqliteAvailable()) {
      // On Node 20 the node:sqlite backend itself refuses with a typed error (the release e2e runs it on 22).
      expect(() => openRunHistory({ path: path.join(dir, 'history.db') }, probes)).toThrow(
        expect.objectContaining({ code: 'open_failed' }),
      );
      return;
    }
    const opened = openRunHistory({ path: path.join(dir, 'history.db') }, probes);
    expect(opened.backend).toBe('node:sqlite');
    expect(opened.fallbackReason).toBe('wrong ABI');
    expect(opened.history).toMatchObject({ backend: 'node:sqlite' });
    await opened.history.close();
  });
});
