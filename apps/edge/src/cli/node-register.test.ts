import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { renderConfigTemplate } from '@iop/config';
import type { CliIo } from './command.js';
import { createNodeRegisterCommand } from './node-register.js';

describe('iop-edge node register: install lines', () => {
  let dir: string;
  let out: string;
  let io: CliIo;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-register-'));
    fs.writeFileSync(
      path.join(dir, 'edge.yaml'),
      renderConfigTemplate({ publicUrl: 'http://198.51.100.7:19091', dataDir: path.join(dir, 'data') }),
    );
    out = '';
    const stdout = new PassThrough();
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    io = {
      stdout,
      stderr: new PassThrough(),
      stdin: new PassThrough(),
      env: {},
      cwd: dir,
      execPath: path.join(dir, 'iop-edge'),
    };
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const command = createNodeRegisterCommand({ networkInterfaces: () => ({}) });

  it('prints the Linux/macOS and Windows one-liners with the real URL, edge address and token', async () => {
    expect(await command.run(['node-01'], io)).toBe(0);
    const token = /Token \(shown only now; the edge keeps only its SHA-256\): (\S+)/.exec(out)?.[1] ?? '';
    expect(token).not.toBe('');
    const lines = out.split('\n');
    expect(lines).toContain(
      `    curl -fsSL 'http://198.51.100.7:19091/install.sh' | IOP_TOKEN='${token}' bash -s -- --node-id 'node-01' ` +
        "--edge '198.51.100.7:19090' --artifact-url 'http://198.51.100.7:19091/artifacts'",
    );
    expect(lines).toContain(
      `    iex (irm 'http://198.51.100.7:19091/install.ps1'); Start-IopNode -NodeId 'node-01' -Token '${token}' ` +
        "-Edge '198.51.100.7:19090' -ArtifactUrl 'http://198.51.100.7:19091/artifacts'",
    );
  });

  it('adds the lines to --json output', async () => {
    expect(await command.run(['node-02', '--json'], io)).toBe(0);
    const result = JSON.parse(out) as {
      token: string;
      install_unix: string;
      install_windows: string;
      bootstrap_url: string;
    };
    expect(result.bootstrap_url).toBe('http://198.51.100.7:19091');
    expect(result.install_unix).toContain(`IOP_TOKEN='${result.token}' bash -s -- --node-id 'node-02'`);
    expect(result.install_windows).toContain(`Start-IopNode -NodeId 'node-02' -Token '${result.token}'`);
  });
});
