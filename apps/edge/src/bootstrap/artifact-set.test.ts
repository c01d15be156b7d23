import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  formatChecksums,
  parseArtifactName,
  parseChecksums,
  readArtifactSet,
  scanArtifactDir,
} from './artifact-set.js';

describe('artifact set', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-artifacts-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('parses artifact names and refuses anything else', () => {
    expect(parseArtifactName('iop-node-0.1.0-darwin-arm64.tar.gz')).toEqual({
      version: '0.1.0',
      os: 'darwin',
      arch: 'arm64',
    });
    expect(parseArtifactName('iop-node-0.1.0-rc.1-windows-amd64.tar.gz')?.version).toBe('0.1.0-rc.1');
    expect(parseArtifactName('iop-node-0.1.0-freebsd-amd64.tar.gz')).toBeUndefined();
    expect(parseArtifactName('../iop-node-0.1.0-linux-amd64.tar.gz')).toBeUndefined();
  });

  it('rejects malformed SHA256SUMS lines with their line number', () => {
    expect(() => parseChecksums(`${'a'.repeat(64)}  x\nnot a line\n`)).toThrow(
      expect.objectContaining({ code: 'invalid_checksums', message: expect.stringContaining('line 2') }),
    );
  });

  it('hashes a folder, and reads back what it wrote; an empty folder is an empty set', async () => {
    expect(readArtifactSet(dir)).toEqual({ dir, version: undefined, artifacts: [] });
    fs.writeFileSync(path.join(dir, 'iop-node-1.2.3-linux-arm64.tar.gz'), 'abc');
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'ignored');
    const scanned = await scanArtifactDir(dir);
    expect(scanned.artifacts).toEqual([
      {
        file: 'iop-node-1.2.3-linux-arm64.tar.gz',
        version: '1.2.3',
        os: 'linux',
        arch: 'arm64',
        sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
        size: 3,
      },
    ]);
    fs.writeFileSync(path.join(dir, 'SHA256SUMS'), formatChecksums(scanned.artifacts));
    expect(readArtifactSet(dir)).toEqual(scanned);
  });

  it('refuses a listed file that is missing and artifacts of mixed versions', async () => {
    fs.writeFileSync(path.join(dir, 'SHA256SUMS'), `${'a'.repeat(64)}  iop-node-1.0.0-linux-amd64.tar.gz\n`);
    expect(() => readArtifactSet(dir)).toThrow(expect.objectContaining({ code: 'artifact_missing' }));
    fs.writeFileSync(path.join(dir, 'iop-node-1.0.0-linux-amd64.tar.gz'), 'a');
    fs.writeFileSync(path.join(dir, 'iop-node-1.1.0-linux-arm64.tar.gz'), 'b');
    await expect(scanArtifactDir(dir)).rejects.toMatchObject({ code: 'mixed_versions' });
  });
});
