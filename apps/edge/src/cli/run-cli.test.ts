import { describe, expect, it } from '@jest/globals';
import type { CliCommand } from './command.js';
import { memoryIo } from './test-support/memory-io.js';
import { runCli } from './run-cli.js';

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
    expect(await runCli(['config', 'check', '--json'], memoryIo().io, commands)).toBe(0);
    expect(seen).toEqual([['--json']]);
  });

  it('accepts --config before the command words', async () => {
    const seen: string[][] = [];
    const commands = [recorder(['config', 'check'], seen)];
    expect(await runCli(['--config', 'edge.yaml', 'config', 'check'], memoryIo().io, commands)).toBe(0);
    expect(seen).toEqual([['--config', 'edge.yaml']]);
  });

  it('rejects unknown commands with exit code 2', async () => {
    const streams = memoryIo();
    expect(await runCli(['frobnicate'], streams.io, [])).toBe(2);
    expect(streams.err()).toContain("unknown command 'frobnicate'");
  });
});
