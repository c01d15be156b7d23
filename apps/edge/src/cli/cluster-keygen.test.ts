import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFabricKeyring } from '../cluster/fabric-keyring.js';
import { clusterKeygenCommand } from './cluster-keygen.js';
import { UsageError } from './command.js';
import { memoryIo } from './test-support/memory-io.js';

describe('iop-edge cluster keygen', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-keygen-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes a readable 0600 key file relative to the working directory', async () => {
    const io = memoryIo(dir);
    expect(await clusterKeygenCommand.run(['--out', 'fabric.key'], io.io)).toBe(0);
    const file = path.join(dir, 'fabric.key');
    if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(readFabricKeyring(file).keys).toHaveLength(1);
    expect(io.out()).toContain(`cluster.fabric_key_file: ${file}`);
    // The key itself is never printed.
    expect(io.out()).not.toContain(fs.readFileSync(file, 'utf8').trim());
  });

  it('refuses to overwrite a file, and needs --out', async () => {
    const file = path.join(dir, 'fabric.key');
    fs.writeFileSync(file, 'keep me\n');
    const io = memoryIo(dir);
    expect(await clusterKeygenCommand.run(['--out', file], io.io)).toBe(1);
    expect(io.err()).toContain('a fabric key is never overwritten');
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me\n');
    await expect(clusterKeygenCommand.run([], memoryIo(dir).io)).rejects.toBeInstanceOf(UsageError);
  });
});
