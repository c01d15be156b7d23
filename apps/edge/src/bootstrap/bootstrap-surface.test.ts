// The bootstrap server in-process on 127.0.0.1 (port 0): what it serves, and what it refuses.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { EdgeConfig } from '@iop/config';
import { portOf, rawHttpRequest } from '../test-support/raw-http-request.js';
import { silentLogger } from '../logging.js';
import type { Surface } from '../surface.js';
import { createBootstrapSurfaceFactory, type BootstrapSurfaceDeps } from './bootstrap-surface.js';
import type { BootstrapManifest } from './bootstrap-content.js';

const interfaces = () => ({}) as ReturnType<typeof os.networkInterfaces>;

function edgeConfig(artifactDir: string, publicUrl = ''): EdgeConfig {
  return {
    edge: { listen: '0.0.0.0:19090', tls: { enabled: false, cert_file: '', key_file: '' } },
    bootstrap: { listen: '127.0.0.1:0', public_url: publicUrl, artifact_dir: artifactDir },
    http: { allowed_hosts: [] },
    nodes: [],
  } as unknown as EdgeConfig;
}

function context(config: EdgeConfig): BootstrapSurfaceDeps {
  return { config, logger: silentLogger };
}

describe('bootstrap surface', () => {
  let dir: string;
  let surface: Surface | undefined;
  const linux = 'iop-node-0.1.0-linux-amd64.tar.gz';
  const windows = 'iop-node-0.1.0-windows-arm64.tar.gz';

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-bootstrap-'));
    const sums: string[] = [];
    for (const [file, content] of [
      [linux, 'linux artifact bytes'],
      [windows, 'windows artifact bytes'],
    ] as const) {
      fs.writeFileSync(path.join(dir, file), content);
      sums.push(`${crypto.createHash('sha256').update(content).digest('hex')}  ${file}`);
    }
    fs.writeFileSync(path.join(dir, 'SHA256SUMS'), `${sums.join('\n')}\n`);
    // Present in the folder but not listed: never served.
    fs.writeFileSync(path.join(dir, 'iop-node-0.1.0-darwin-arm64.tar.gz'), 'unlisted');
    fs.writeFileSync(path.join(dir, 'secret.txt'), 'do not serve');
  });
  afterEach(async () => {
    await surface?.close();
    surface = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function start(publicUrl = ''): Promise<string> {
    surface = await createBootstrapSurfaceFactory({ interfaces, edgeVersion: '9.9.9' })(
      context(edgeConfig(dir, publicUrl)),
    );
    if (!surface) throw new Error('surface did not start');
    expect(surface.name).toBe('bootstrap');
    return `http://${surface.address.split(' ')[0]}`;
  }

  it('serves nodes that fetch install.sh by the public URL or the listen address, and 421 for any other Host', async () => {
    const base = await start('http://edge.example:19091');
    const port = portOf(base);
    const fetchScript = (host: string) => rawHttpRequest(port, 'GET', '/install.sh', { host });
    expect((await fetchScript(`rebind.evil.example:${port}`)).status).toBe(421);
    expect((await fetchScript('edge.example:19091')).status).toBe(200);
    expect((await fetchScript(`127.0.0.1:${port}`)).status).toBe(200);
  });

  it('is not started when artifact_dir does not exist', async () => {
    const factory = createBootstrapSurfaceFactory({ interfaces });
    expect(await factory(context(edgeConfig(path.join(dir, 'missing'))))).toBeUndefined();
  });

  it('serves install.sh and install.ps1 naming the artifact version, artifact URL and edge address', async () => {
    const base = await start('http://edge.example:19091');
    const sh = await fetch(`${base}/install.sh`);
    expect(sh.status).toBe(200);
    expect(sh.headers.get('content-type')).toContain('text/x-shellscript');
    const text = await sh.text();
    expect(text).toContain("IOP_VERSION='0.1.0'");
    expect(text).toContain("IOP_DEFAULT_ARTIFACT_URL='http://edge.example:19091/artifacts'");
    expect(text).toContain("IOP_DEFAULT_EDGE='edge.example:19090'");
    const ps1 = await (await fetch(`${base}/install.ps1`)).text();
    expect(ps1).toContain("$IopDefaultArtifactUrl = 'http://edge.example:19091/artifacts'\r\n");
  });

  it('serves the manifest and SHA256SUMS of the listed artifacts, with the bound port when none is configured', async () => {
    const base = await start();
    const manifest = (await (await fetch(`${base}/manifest.json`)).json()) as BootstrapManifest;
    expect(manifest.public_url).toBe(base);
    expect(manifest.version).toBe('0.1.0');
    expect(manifest.artifacts.map((artifact) => [artifact.os, artifact.arch, artifact.size])).toEqual([
      ['linux', 'amd64', 20],
      ['windows', 'arm64', 22],
    ]);
    expect(manifest.artifacts[0]?.url).toBe(`${base}/artifacts/${linux}`);
    const sums = await (await fetch(`${base}/artifacts/SHA256SUMS`)).text();
    expect(sums).toBe(fs.readFileSync(path.join(dir, 'SHA256SUMS'), 'utf8'));
  });

  it('streams a listed artifact byte for byte, and answers HEAD with its length only', async () => {
    const base = await start();
    const response = await fetch(`${base}/artifacts/${linux}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/gzip');
    expect(Buffer.from(await response.arrayBuffer()).toString()).toBe('linux artifact bytes');
    const head = await fetch(`${base}/artifacts/${windows}`, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe('22');
  });

  it('refuses unlisted files, path tricks and other methods', async () => {
    const base = await start();
    for (const target of [
      '/artifacts/iop-node-0.1.0-darwin-arm64.tar.gz',
      '/artifacts/secret.txt',
      '/artifacts/..%2Fsecret.txt',
      '/artifacts/%2e%2e/secret.txt',
      '/secret.txt',
      '/',
    ]) {
      const response = await fetch(`${base}${target}`);
      expect([target, response.status]).toEqual([target, 404]);
      expect(await response.text()).not.toContain('do not serve');
    }
    const post = await fetch(`${base}/install.sh`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('picks up a rewritten SHA256SUMS without a restart, and reports a broken list as a server error', async () => {
    const base = await start();
    fs.writeFileSync(
      path.join(dir, 'SHA256SUMS'),
      fs.readFileSync(path.join(dir, 'SHA256SUMS'), 'utf8').split('\n')[0] + '\n',
    );
    expect((await fetch(`${base}/artifacts/${windows}`)).status).toBe(404);
    fs.writeFileSync(path.join(dir, 'SHA256SUMS'), 'garbage\n');
    const broken = await fetch(`${base}/manifest.json`);
    expect(broken.status).toBe(500);
  });
});
