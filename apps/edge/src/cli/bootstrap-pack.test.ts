import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { renderConfigTemplate } from '@iop/config';
import { createBootstrapPackCommand } from './bootstrap-pack.js';
import type { CliIo } from './command.js';
import { memoryIo } from './test-support/memory-io.js';

const interfaces = () => ({}) as ReturnType<typeof os.networkInterfaces>;

describe('iop-edge bootstrap pack', () => {
  let dir: string;
  let out: () => string;
  let err: () => string;
  let io: CliIo;

  beforeEach(() => {
    // An unpacked release: the executable, edge.yaml from `config init`, artifacts/ beside them.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-pack-'));
    fs.writeFileSync(
      path.join(dir, 'edge.yaml'),
      renderConfigTemplate({ publicUrl: 'http://edge.example:19091' }),
    );
    fs.mkdirSync(path.join(dir, 'artifacts'));
    fs.writeFileSync(path.join(dir, 'artifacts', 'iop-node-0.2.0-linux-amd64.tar.gz'), 'abc');
    ({ io, out, err } = memoryIo(dir, {}, path.join(dir, 'iop-edge')));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const command = createBootstrapPackCommand({ interfaces, edgeVersion: '9.9.9' });

  it('finds the bundle-local edge.yaml, resolves artifact_dir against it and writes the four files', async () => {
    expect(await command.run([], io)).toBe(0);
    const artifacts = path.join(dir, 'artifacts');
    expect(fs.readFileSync(path.join(artifacts, 'SHA256SUMS'), 'utf8')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  iop-node-0.2.0-linux-amd64.tar.gz\n',
    );
    const manifest = JSON.parse(fs.readFileSync(path.join(artifacts, 'manifest.json'), 'utf8')) as {
      version: string;
      edge_address: string;
      artifacts: Array<{ url: string }>;
    };
    expect(manifest.version).toBe('0.2.0');
    expect(manifest.edge_address).toBe('edge.example:19090');
    expect(manifest.artifacts[0]?.url).toBe(
      'http://edge.example:19091/artifacts/iop-node-0.2.0-linux-amd64.tar.gz',
    );
    const sh = path.join(artifacts, 'install.sh');
    expect(fs.statSync(sh).mode & 0o777).toBe(0o755);
    execFileSync('bash', ['-n', sh]);
    expect(fs.readFileSync(sh, 'utf8')).toContain("IOP_VERSION='0.2.0'");
    expect(fs.readFileSync(path.join(artifacts, 'install.ps1'), 'utf8')).toContain("$IopVersion = '0.2.0'");
    expect(out()).toContain('linux-amd64');
    expect(out()).toContain('new');
  });

  it('reports an artifact whose checksum changed since the last pack', async () => {
    await command.run([], io);
    fs.writeFileSync(path.join(dir, 'artifacts', 'iop-node-0.2.0-linux-amd64.tar.gz'), 'rebuilt');
    const before = out().length;
    expect(await command.run([], io)).toBe(0);
    expect(out().slice(before)).toContain('CHECKSUM CHANGED');
  });

  it('fails clearly when artifact_dir is missing', async () => {
    fs.rmSync(path.join(dir, 'artifacts'), { recursive: true });
    expect(await command.run([], io)).toBe(1);
    expect(err()).toContain(`bootstrap.artifact_dir ${path.join(dir, 'artifacts')} does not exist`);
  });
});
