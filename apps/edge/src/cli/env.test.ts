import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
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

  it('prefers IOP_EDGE_CONFIG over the bundle-local file, and still reports when the file is missing', async () => {
    await writeFile(path.join(dir, 'edge.yaml'), 'nodes: []\n');
    const { io, out } = memoryIo(dir, { IOP_EDGE_CONFIG: 'elsewhere.yaml' });
    expect(await runCli(['env'], io)).toBe(0);
    expect(out()).toContain(`config:   ${path.join(dir, 'elsewhere.yaml')} (env, missing)`);
    expect(out()).toContain('data dir: (unknown: config not loadable)');
  });
});
