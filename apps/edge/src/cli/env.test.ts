import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ensureEdgeIdentity } from '../tls/edge-identity.js';
import { memoryIo } from './test-support/memory-io.js';
import { runCli } from './run-cli.js';

describe('iop-edge env', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-env-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the resolved config path, its source, versions, platform and the absolute data dir', async () => {
    await writeFile(path.join(dir, 'edge.yaml'), 'edge: { data_dir: "state" }\n');
    const { io, out } = memoryIo(dir);
    expect(await runCli(['env'], io)).toBe(0);
    expect(out()).toContain(`config:   ${path.join(dir, 'edge.yaml')} (bundle, valid)`);
    expect(out()).toContain(`node:     ${process.versions.node}`);
    expect(out()).toContain(`platform: ${process.platform}/${process.arch}`);
    expect(out()).toContain(`data dir: ${path.join(dir, 'state')}`);
  });

  it('finds the executable-adjacent edge.yaml and reports as JSON', async () => {
    await mkdir(path.join(dir, 'bin'));
    await writeFile(path.join(dir, 'bin', 'edge.yaml'), 'nodes: []\n');
    const { io, out } = memoryIo(dir);
    expect(await runCli(['env', '--json'], io)).toBe(0);
    const report = JSON.parse(out()) as Record<string, unknown>;
    expect(report).toMatchObject({
      config_path: path.join(dir, 'bin', 'edge.yaml'),
      config_source: 'executable',
      config_valid: true,
      data_dir: path.join(dir, 'bin', 'data'),
    });
  });

  it('prints the edge fingerprint nodes pin, and says when the link is unencrypted', async () => {
    const identity = await ensureEdgeIdentity({
      dir: path.join(dir, 'data'),
      commonName: 'e',
      hosts: ['localhost'],
    });
    await writeFile(
      path.join(dir, 'edge.yaml'),
      `edge: { tls: { enabled: true, cert_file: "data/edge-cert.pem", key_file: "data/edge-key.pem" } }\n`,
    );
    const tls = memoryIo(dir);
    expect(await runCli(['env'], tls.io)).toBe(0);
    expect(tls.out()).toContain(`edge fingerprint: ${identity.fingerprint}`);

    await writeFile(path.join(dir, 'edge.yaml'), 'nodes: []\n');
    const plain = memoryIo(dir);
    expect(await runCli(['env'], plain.io)).toBe(0);
    expect(plain.out()).toContain('edge fingerprint: none: edge.tls is off, the node link is NOT encrypted');
  });

  it('prefers IOP_EDGE_CONFIG over the bundle-local file, and still reports when the file is missing', async () => {
    await writeFile(path.join(dir, 'edge.yaml'), 'nodes: []\n');
    const { io, out } = memoryIo(dir, { IOP_EDGE_CONFIG: 'elsewhere.yaml' });
    expect(await runCli(['env'], io)).toBe(0);
    expect(out()).toContain(`config:   ${path.join(dir, 'elsewhere.yaml')} (env, missing)`);
    expect(out()).toContain('data dir: (unknown: config not loadable)');
  });
});
