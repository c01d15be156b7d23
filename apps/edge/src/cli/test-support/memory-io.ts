// An in-memory CliIo for iop-edge command tests: stdout/stderr captured as text, a stdin the test can write to,
// and the executable path a bundle-local lookup starts from (default `<cwd>/bin/iop-edge`, like the release).
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { CliIo } from '../command.js';

export interface MemoryIo {
  io: CliIo;
  stdin: PassThrough;
  /** Everything written to stdout so far. */
  out(): string;
  /** Everything written to stderr so far. */
  err(): string;
}

export function memoryIo(
  cwd = '/',
  env: NodeJS.ProcessEnv = {},
  execPath = path.join(cwd, 'bin', 'iop-edge'),
): MemoryIo {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return {
    io: { stdout, stderr, stdin, env, cwd, execPath },
    stdin,
    out: () => out,
    err: () => err,
  };
}
