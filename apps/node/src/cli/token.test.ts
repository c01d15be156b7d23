import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { UsageError } from './command.js';
import { readToken, refuseTokenFlag } from './token.js';

describe('token source', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-token-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('prefers --token-file over the environment and trims it', () => {
    fs.writeFileSync(path.join(dir, 't'), '  abc \n', { mode: 0o600 });
    expect(readToken('t', { IOP_NODE_TOKEN: 'env' }, dir)).toEqual({
      token: 'abc',
      origin: `file ${path.join(dir, 't')}`,
      warning: undefined,
    });
    expect(readToken(undefined, { IOP_NODE_TOKEN: 'env' }, dir)).toEqual({
      token: 'env',
      origin: 'env IOP_NODE_TOKEN',
    });
  });

  it('warns about a token file other users can read', () => {
    fs.writeFileSync(path.join(dir, 't'), 'abc', { mode: 0o644 });
    fs.chmodSync(path.join(dir, 't'), 0o644);
    expect(readToken('t', {}, dir).warning).toContain('chmod 600');
  });

  it('rejects missing, empty or multi-word token files and a missing token', () => {
    fs.writeFileSync(path.join(dir, 'empty'), '\n');
    fs.writeFileSync(path.join(dir, 'two'), 'a b');
    expect(() => readToken('missing', {}, dir)).toThrow(UsageError);
    expect(() => readToken('empty', {}, dir)).toThrow(/is empty/);
    expect(() => readToken('two', {}, dir)).toThrow(/single token/);
    expect(() => readToken(undefined, { IOP_NODE_TOKEN: '  ' }, dir)).toThrow(/no token/);
  });

  it('refuses --token in any form', () => {
    expect(() => refuseTokenFlag(['run', '--token', 'x'])).toThrow(/--token is refused/);
    expect(() => refuseTokenFlag(['--token=x'])).toThrow(UsageError);
    expect(() => refuseTokenFlag(['--token-file', 'f'])).not.toThrow();
  });
});
