import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import type { CliCommand, CliIo } from './command.js';
import { runCli } from './run-cli.js';

function io(): { io: CliIo; out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return {
    io: { stdout, stderr, stdin: new PassThrough(), env: {}, cwd: '/', execPath: '/bin/iop-edge' },
    out: () => out,
    err: () => err,
  };
}

function recorder(path: string[], seen: string[][]): CliCommand {
  return {
    path,
    summary: path.join(' '),
    usage: path.join(' '),
    run: (argv) => {
      seen.push(argv);
      return Promise.resolve(0);
    },
  };
}

describe('runCli', () => {
  it('picks the longest matching command and passes the remaining arguments', async () => {
    const seen: string[][] = [];
    const commands = [recorder(['config'], seen), recorder(['config', 'check'], seen)];
    expect(await runCli(['config', 'check', '--json'], io().io, commands)).toBe(0);
    expect(seen).toEqual([['--json']]);
  });

  it('accepts --config before the command words', async () => {
    const seen: string[][] = [];
    const commands = [recorder(['config', 'check'], seen)];
    expect(await runCli(['--config', 'edge.yaml', 'config', 'check'], io().io, commands)).toBe(0);
    expect(seen).toEqual([['--config', 'edge.yaml']]);
  });

  it('rejects unknown commands with exit code 2', async () => {
    const streams = io();
    expect(await runCli(['frobnicate'], streams.io, [])).toBe(2);
    expect(streams.err()).toContain("unknown command 'frobnicate'");
  });
});
