import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  FabricKeyError,
  generateFabricKey,
  parseFabricKeyring,
  readFabricKeyring,
  writeFabricKeyFile,
} from './fabric-keyring.js';

describe('fabric keyring', () => {
  it('reads one key per line, the first one primary, skipping comments, blanks and repeats', () => {
    const first = generateFabricKey();
    const second = generateFabricKey();
    const ring = parseFabricKeyring(
      `# rotation in progress\n${first}\n\n${second}\n${first}\n`,
      'fabric.key',
    );
    expect(ring.keys).toHaveLength(2);
    expect(ring.primary.secret.toString('base64')).toBe(first);
    expect(ring.find(ring.keys[1]?.id ?? new Uint8Array()))?.toBe(ring.keys[1]);
    expect(ring.find(new Uint8Array([0, 0, 0, 0]))).toBeUndefined();
  });

  it('names the file and line of a bad key, and refuses an empty ring', () => {
    expect(() => parseFabricKeyring(`${generateFabricKey()}\nnot-a-key\n`, '/etc/iop/fabric.key')).toThrow(
      '/etc/iop/fabric.key:2: not a fabric key',
    );
    expect(() => parseFabricKeyring(Buffer.alloc(16).toString('base64'), 'k')).toThrow(
      'k:1: not a fabric key',
    );
    let caught: unknown;
    try {
      parseFabricKeyring('# nothing\n', 'k');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FabricKeyError);
    expect((caught as FabricKeyError).code).toBe('fabric_key_missing');
  });

  it('keygen writes a 0600 file it can read back, and never overwrites one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-fabric-key-'));
    try {
      const file = path.join(dir, 'fabric.key');
      writeFabricKeyFile(file);
      if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const before = fs.readFileSync(file, 'utf8');
      expect(readFabricKeyring(file).keys).toHaveLength(1);
      expect(() => writeFabricKeyFile(file)).toThrow(expect.objectContaining({ code: 'fabric_key_exists' }));
      expect(fs.readFileSync(file, 'utf8')).toBe(before);
      expect(() => readFabricKeyring(path.join(dir, 'missing.key'))).toThrow(
        expect.objectContaining({ code: 'fabric_key_unreadable' }),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
