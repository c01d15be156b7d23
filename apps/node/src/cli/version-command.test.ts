import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { PROTOCOL_VERSION } from '@iop/wire';
import { runCli } from './run-cli.js';
import { versionCommand } from './version-command.js';
import { AGENT_VERSION } from './version.js';
import { memoryIo } from './test-support/memory-io.js';

describe('iop-node version', () => {
  it('matches the package version', () => {
    const packageJson = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json');
    expect(AGENT_VERSION).toBe(
      (JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { version: string }).version,
    );
  });

  it('prints the agent and protocol versions, also as JSON and via --version', async () => {
    const io = memoryIo();
    expect(await runCli(['version'], io, [versionCommand])).toBe(0);
    expect(await runCli(['--version', '--json'], io, [versionCommand])).toBe(0);
    const [text, json] = io.out().trimEnd().split('\n');
    expect(text).toContain(`iop-node ${AGENT_VERSION} (protocol ${PROTOCOL_VERSION}`);
    expect(JSON.parse(json)).toMatchObject({ version: AGENT_VERSION, protocol_version: PROTOCOL_VERSION });
  });

  it('rejects unknown commands and flags', async () => {
    const io = memoryIo();
    expect(await runCli(['launch'], io, [versionCommand])).toBe(2);
    expect(await runCli(['version', '--bogus'], io, [versionCommand])).toBe(2);
    expect(io.err()).toContain("unknown command 'launch'");
  });
});
