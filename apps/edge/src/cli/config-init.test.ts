import { X509Certificate } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type os from 'node:os';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { loadConfigFile } from '@iop/config';
import { fingerprintOfCertificate } from '@iop/wire';
import { memoryIo } from './test-support/memory-io.js';
import { createConfigInitCommand, pickPublicHost } from './config-init.js';
import { runCli } from './run-cli.js';

type Interfaces = ReturnType<typeof os.networkInterfaces>;

const lan: Interfaces = {
  lo: [
    {
      address: '127.0.0.1',
      netmask: '255.0.0.0',
      family: 'IPv4',
      mac: '00:00:00:00:00:00',
      internal: true,
      cidr: '127.0.0.1/8',
    },
  ],
  eth0: [
    {
      address: 'fe80::1',
      netmask: 'ffff:ffff:ffff:ffff::',
      family: 'IPv6',
      mac: '02:00:00:00:00:01',
      internal: false,
      cidr: 'fe80::1/64',
      scopeid: 2,
    },
    {
      address: '192.0.2.10',
      netmask: '255.255.255.0',
      family: 'IPv4',
      mac: '02:00:00:00:00:01',
      internal: false,
      cidr: '192.0.2.10/24',
    },
  ],
};

function commandsWith(interfaces: Interfaces) {
  return [createConfigInitCommand({ networkInterfaces: () => interfaces })];
}

describe('iop-edge config init', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'iop-config-init-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes ./edge.yaml with the non-loopback host as bootstrap.public_url, and it validates', async () => {
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'init'], io, commandsWith(lan))).toBe(0);
    const target = path.join(dir, 'edge.yaml');
    expect(out()).toContain(`wrote ${target}`);
    const loaded = await loadConfigFile(target);
    expect(loaded.ok).toBe(true);
    if (!loaded.ok) return;
    expect(loaded.config.bootstrap.public_url).toBe('http://192.0.2.10:19091');
    expect(loaded.config.edge.data_dir).toBe(path.join(dir, 'data'));
  });

  it('generates a 256-bit admin token into refresh.admin_token and writes the file mode 0600', async () => {
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'init'], io, commandsWith(lan))).toBe(0);
    const target = path.join(dir, 'edge.yaml');
    expect((await stat(target)).mode & 0o777).toBe(0o600);
    const loaded = await loadConfigFile(target);
    if (!loaded.ok) throw new Error('config invalid');
    const token = loaded.config.refresh.admin_token;
    expect(token).toMatch(/^iop-admin-[A-Za-z0-9_-]{43}$/);
    expect(out()).toContain('require refresh.admin_token from this file');
    expect(out()).not.toContain(token);
    // A second init draws a new token (and an overwritten, once world-readable file becomes 0600).
    await chmod(target, 0o644);
    const again = memoryIo(dir);
    expect(await runCli(['config', 'init', '--overwrite-config'], again.io, commandsWith(lan))).toBe(0);
    expect((await stat(target)).mode & 0o777).toBe(0o600);
    const reloaded = await loadConfigFile(target);
    expect(reloaded.ok && reloaded.config.refresh.admin_token).not.toBe(token);
  });

  it('never overwrites an existing file without --overwrite-config', async () => {
    const target = path.join(dir, 'edge.yaml');
    await writeFile(target, '# mine\n');
    const first = memoryIo(dir);
    expect(await runCli(['config', 'init'], first.io, commandsWith(lan))).toBe(1);
    expect(first.err()).toContain('already exists; pass --overwrite-config');
    expect(await readFile(target, 'utf8')).toBe('# mine\n');

    const second = memoryIo(dir);
    expect(await runCli(['config', 'init', '--overwrite-config'], second.io, commandsWith(lan))).toBe(0);
    expect(await readFile(target, 'utf8')).toContain('public_url: "http://192.0.2.10:19091"');
  });

  it('honours --path and --public-url, and rejects a non-http public URL as a usage error', async () => {
    const { io } = memoryIo(dir);
    const argv = ['config', 'init', '--path', 'sub.yaml', '--public-url', 'https://edge.example.com'];
    expect(await runCli(argv, io, commandsWith({}))).toBe(0);
    expect(await readFile(path.join(dir, 'sub.yaml'), 'utf8')).toContain(
      'public_url: "https://edge.example.com"',
    );

    const bad = memoryIo(dir);
    expect(await runCli(['config', 'init', '--public-url', 'ftp://x'], bad.io, commandsWith({}))).toBe(2);
    expect(bad.err()).toContain('public URL must be an http:// or https:// URL');
  });

  it('writes the file serve would read: the root --config, else IOP_EDGE_CONFIG; --path and --config must agree', async () => {
    const root = memoryIo(dir);
    const rootArgv = ['--config', 'by-flag.yaml', 'config', 'init', '--no-tls', '--public-url', 'http://h:1'];
    expect(await runCli(rootArgv, root.io, commandsWith({}))).toBe(0);
    expect(root.out()).toContain(`wrote ${path.join(dir, 'by-flag.yaml')}`);
    expect((await loadConfigFile(path.join(dir, 'by-flag.yaml'))).ok).toBe(true);

    const fromEnv = memoryIo(dir, { IOP_EDGE_CONFIG: path.join(dir, 'by-env.yaml') });
    const envArgv = ['config', 'init', '--no-tls', '--public-url', 'http://h:1'];
    expect(await runCli(envArgv, fromEnv.io, commandsWith({}))).toBe(0);
    expect(fromEnv.out()).toContain(`wrote ${path.join(dir, 'by-env.yaml')}`);
    // The flag wins over the environment, as in every other command.
    const both = memoryIo(dir, { IOP_EDGE_CONFIG: path.join(dir, 'ignored.yaml') });
    expect(await runCli(['config', 'init', '-c', 'short.yaml', '--no-tls'], both.io, commandsWith({}))).toBe(
      0,
    );
    expect(both.out()).toContain(`wrote ${path.join(dir, 'short.yaml')}`);

    const clash = memoryIo(dir);
    const clashArgv = ['config', 'init', '--path', 'a.yaml', '--config', 'b.yaml'];
    expect(await runCli(clashArgv, clash.io, commandsWith({}))).toBe(2);
    expect(clash.err()).toContain("--path 'a.yaml' and --config 'b.yaml' name different files");
  });

  it('falls back to 127.0.0.1 with a warning when the host has no usable address', async () => {
    const { io, err } = memoryIo(dir);
    expect(await runCli(['config', 'init'], io, commandsWith({ lo: lan.lo }))).toBe(0);
    expect(err()).toContain('no non-loopback address found');
    expect(await readFile(path.join(dir, 'edge.yaml'), 'utf8')).toContain(
      'public_url: "http://127.0.0.1:19091"',
    );
  });

  it('creates the TLS key (0600) and a certificate for the public host, enables edge.tls and keeps them on re-init', async () => {
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'init'], io, commandsWith(lan))).toBe(0);
    const loaded = await loadConfigFile(path.join(dir, 'edge.yaml'));
    if (!loaded.ok) throw new Error('config invalid');
    const tls = loaded.config.edge.tls;
    expect(tls).toEqual({
      enabled: true,
      cert_file: path.join(dir, 'data', 'edge-cert.pem'),
      key_file: path.join(dir, 'data', 'edge-key.pem'),
    });
    expect((await stat(tls.key_file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(dir, 'data'))).mode & 0o777).toBe(0o700);
    const certificate = new X509Certificate(await readFile(tls.cert_file));
    expect(certificate.checkIP('192.0.2.10')).toBe('192.0.2.10');
    const fingerprint = fingerprintOfCertificate(certificate);
    expect(out()).toContain(`edge fingerprint (nodes pin it): ${fingerprint}`);

    const again = memoryIo(dir);
    expect(await runCli(['config', 'init', '--overwrite-config'], again.io, commandsWith(lan))).toBe(0);
    expect(again.out()).toContain(`kept the edge's TLS key`);
    expect(again.out()).toContain(fingerprint);
  });

  it('--no-tls writes the plaintext template and warns', async () => {
    const { io, err } = memoryIo(dir);
    expect(await runCli(['config', 'init', '--no-tls'], io, commandsWith(lan))).toBe(0);
    expect(err()).toContain('unencrypted');
    const loaded = await loadConfigFile(path.join(dir, 'edge.yaml'));
    expect(loaded.ok && loaded.config.edge.tls.enabled).toBe(false);
  });

  it('picks IPv4 first, skips link-local, and brackets IPv6', () => {
    expect(pickPublicHost(lan)).toBe('192.0.2.10');
    const v6only: Interfaces = {
      eth0: [
        {
          address: 'fe80::1',
          netmask: 'ffff::',
          family: 'IPv6',
          mac: 'x',
          internal: false,
          cidr: null,
          scopeid: 2,
        },
        {
          address: '2001:db8::5',
          netmask: 'ffff::',
          family: 'IPv6',
          mac: 'x',
          internal: false,
          cidr: null,
          scopeid: 0,
        },
      ],
    };
    expect(pickPublicHost(v6only)).toBe('[2001:db8::5]');
    expect(pickPublicHost({})).toBeUndefined();
  });
});
