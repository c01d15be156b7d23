import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { DataDirLockedError, lockDataDir, resolveDataDir } from './data-dir.js';

describe('data dir', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-datadir-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('defaults to ~/.iop/node and resolves a flag against the cwd', () => {
    expect(resolveDataDir(undefined, { HOME: '/home/u' }, '/x')).toBe('/home/u/.iop/node');
    expect(resolveDataDir('data', { HOME: '/home/u' }, '/x')).toBe('/x/data');
  });

  it('takes the lock, refuses a second live owner and releases once', () => {
    const lock = lockDataDir(path.join(dir, 'd'));
    expect((fs.statSync(path.join(dir, 'd')).mode & 0o777).toString(8)).toBe('700');
    expect(() => lockDataDir(path.join(dir, 'd'), process.ppid)).toThrow(DataDirLockedError);
    lock.release();
    lock.release();
    expect(fs.existsSync(lock.path)).toBe(false);
  });

  it('takes over a lock left by a dead process', () => {
    fs.mkdirSync(path.join(dir, 'd'));
    fs.writeFileSync(path.join(dir, 'd', 'node.lock'), '2147483646\n');
    const lock = lockDataDir(path.join(dir, 'd'));
    expect(fs.readFileSync(lock.path, 'utf8').trim()).toBe(String(process.pid));
    lock.release();
  });
});

describe('data dir lock while another agent is writing it', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-datadir-'));
    fs.mkdirSync(path.join(dir, 'd'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('leaves a fresh empty lock alone (its creator has not written its pid yet)', () => {
    fs.writeFileSync(path.join(dir, 'd', 'node.lock'), '');
    expect(() => lockDataDir(path.join(dir, 'd'))).toThrow(/being locked/);
    expect(fs.readFileSync(path.join(dir, 'd', 'node.lock'), 'utf8')).toBe('');
  });

  it('takes over an empty lock once it is older than freshMs (its creator died mid-write)', () => {
    fs.writeFileSync(path.join(dir, 'd', 'node.lock'), '');
    const lock = lockDataDir(path.join(dir, 'd'), process.pid, { now: () => Date.now() + 60_000 });
    expect(fs.readFileSync(lock.path, 'utf8').trim()).toBe(String(process.pid));
    lock.release();
  });

  it('creates the lock with its pid in one step and leaves no temporary files', () => {
    const lock = lockDataDir(path.join(dir, 'd'));
    expect(fs.readdirSync(path.join(dir, 'd'))).toEqual(['node.lock']);
    expect(fs.readFileSync(lock.path, 'utf8')).toBe(`${process.pid}\n`);
    lock.release();
  });
});
