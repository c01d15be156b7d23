import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { renderConfigTemplate } from '@iop/config';
import type { CliIo } from './command.js';
import { ensureEdgeIdentity } from '../tls/edge-identity.js';
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

  it('prints the Linux/macOS and Windows one-liners with the real URL, edge address, token and pins', async () => {
    expect(await command.run(['node-01'], io)).toBe(0);
    const token = /Token \(shown only now; the edge keeps only its SHA-256\): (\S+)/.exec(out)?.[1] ?? '';
    expect(token).not.toBe('');
    const lines = out.split('\n');
    const unix = lines.find((line) => line.startsWith('    f="$(mktemp)" && curl'));
    expect(unix).toContain(
      `then IOP_TOKEN='${token}' bash "$f" --node-id 'node-01' --edge '198.51.100.7:19090' ` +
        "--artifact-url 'http://198.51.100.7:19091/artifacts'; ",
    );
    expect(unix).toMatch(/grep -q '\^[0-9a-f]{64} '/);
    const windows = lines.find((line) => line.startsWith('    $b = (New-Object Net.WebClient)'));
    expect(windows).toContain(
      `Start-IopNode -NodeId 'node-01' -Token '${token}' -Edge '198.51.100.7:19090' ` +
        "-ArtifactUrl 'http://198.51.100.7:19091/artifacts'",
    );
    // This template has edge.tls off: the output says so instead of printing a pin.
    expect(out).toContain('WARNING: edge.tls is off');
    // The output ends with the next step.
    expect(lines.filter((line) => line !== '').at(-1)).toBe(
      'Next, when it connects (iop-edge nodes list): iop-edge node adopt node-01   ' +
        '(adds the model servers and agent CLIs it discovered, live)',
    );
  });

  it('adds the lines and the edge fingerprint to --json output', async () => {
    const identity = await ensureEdgeIdentity({
      dir: path.join(dir, 'data'),
      commonName: 'iop-edge t',
      hosts: ['localhost'],
    });
    fs.writeFileSync(
      path.join(dir, 'edge.yaml'),
      renderConfigTemplate({
        publicUrl: 'http://198.51.100.7:19091',
        dataDir: path.join(dir, 'data'),
        tls: { certFile: identity.certFile, keyFile: identity.keyFile },
      }),
    );
    expect(await command.run(['node-02', '--json'], io)).toBe(0);
    const result = JSON.parse(out) as {
      token: string;
      install_unix: string;
      install_windows: string;
      bootstrap_url: string;
      edge_fingerprint: string;
      command: string;
    };
    expect(result.bootstrap_url).toBe('http://198.51.100.7:19091');
    expect(result.edge_fingerprint).toBe(identity.fingerprint);
    expect(result.install_unix).toContain(
      `IOP_TOKEN='${result.token}' bash "$f" --node-id 'node-02' --edge '198.51.100.7:19090' ` +
        `--edge-fingerprint '${identity.fingerprint}'`,
    );
    expect(result.install_windows).toContain(`-EdgeFingerprint '${identity.fingerprint}'`);
    expect(result.command).toBe(
      `iop-node run --edge 198.51.100.7:19090 --node-id node-02 --edge-fingerprint ${identity.fingerprint}`,
    );
  });
});
