import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { EdgeConfig } from '@iop/config';
import { bootstrapPublicUrl, unixInstallCommand, windowsInstallCommand } from './bootstrap-urls.js';

function config(listen: string, publicUrl: string): EdgeConfig {
  return { bootstrap: { listen, public_url: publicUrl, artifact_dir: '/x' } } as unknown as EdgeConfig;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

const interfaces = () =>
  ({
    lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true, netmask: '', mac: '', cidr: null }],
    eth0: [{ address: '198.51.100.7', family: 'IPv4', internal: false, netmask: '', mac: '', cidr: null }],
  }) as unknown as ReturnType<typeof os.networkInterfaces>;

describe('bootstrapPublicUrl', () => {
  it('prefers bootstrap.public_url (without a trailing slash)', () => {
    expect(bootstrapPublicUrl(config('0.0.0.0:19091', 'http://edge.example:8080/'), interfaces)).toBe(
      'http://edge.example:8080',
    );
  });
  it('derives it from the listen address, replacing a wildcard host and an ephemeral port', () => {
    expect(bootstrapPublicUrl(config('0.0.0.0:19091', ''), interfaces)).toBe('http://198.51.100.7:19091');
    expect(bootstrapPublicUrl(config('127.0.0.1:0', ''), interfaces, 40123)).toBe('http://127.0.0.1:40123');
    expect(bootstrapPublicUrl(config('[::1]:19091', ''), interfaces)).toBe('http://[::1]:19091');
  });
});

describe('install one-liners', () => {
  const fingerprint = `sha256:${'ef'.repeat(32)}`;
  const values = {
    publicUrl: 'http://198.51.100.7:19091',
    nodeId: 'node-01',
    token: "t0k'en$`x`",
    edgeAddress: '198.51.100.7:19090',
    edgeFingerprint: fingerprint,
    scriptSha256: 'a'.repeat(64),
  };

  /** Runs the line with stand-ins: curl writes `body` to -o's file, bash prints what it receives. */
  function runWith(line: string, body: string, tools: 'sha256sum' | 'shasum') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-oneliner-'));
    try {
      const bin = path.join(dir, 'bin');
      fs.mkdirSync(bin);
      const tool = (name: string, text: string) =>
        fs.writeFileSync(path.join(bin, name), `#!/bin/sh\n${text}\n`, { mode: 0o755 });
      tool('curl', `while [ "$1" != -o ]; do shift; done; printf '%s' '${body}' > "$2"`);
      tool('bash', `printf '%s|' "$IOP_TOKEN" "$@" > "${dir}/ran"`);
      for (const name of ['mktemp', 'grep', 'rm', 'cat']) {
        fs.symlinkSync(
          execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim(),
          path.join(bin, name),
        );
      }
      // macOS has shasum but no sha256sum: the line must work with either.
      const real = execFileSync('sh', ['-c', `command -v ${tools}`], { encoding: 'utf8' }).trim();
      fs.symlinkSync(real, path.join(bin, tools));
      const result = spawnSync('/bin/sh', ['-c', line], { encoding: 'utf8', env: { PATH: bin } });
      const ran = fs.existsSync(path.join(dir, 'ran'))
        ? fs.readFileSync(path.join(dir, 'ran'), 'utf8')
        : undefined;
      return { status: result.status, stderr: result.stderr, ran };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it.each(['sha256sum', 'shasum'] as const)(
    'Linux/macOS (%s): runs install.sh only when its SHA-256 is the pinned one, token through IOP_TOKEN',
    (tools) => {
      const body = 'echo installer';
      const line = unixInstallCommand({ ...values, scriptSha256: sha256(body) });
      const good = runWith(line, body, tools);
      expect(good.status).toBe(0);
      expect(good.ran).toMatch(
        new RegExp(
          `^t0k'en\\$\`x\`\\|/[^|]+\\|--node-id\\|node-01\\|--edge\\|198\\.51\\.100\\.7:19090\\|` +
            `--edge-fingerprint\\|${fingerprint}\\|--artifact-url\\|http://198\\.51\\.100\\.7:19091/artifacts\\|$`,
        ),
      );
      const tampered = runWith(line, 'echo evil', tools);
      expect(tampered.ran).toBeUndefined();
      expect(tampered.status).toBe(1);
      expect(tampered.stderr).toContain('install.sh does not match the SHA-256 pinned in this line');
    },
  );

  it('Windows: checks install.ps1 with Get-FileHash before loading it, then calls Start-IopNode with the pin', () => {
    expect(windowsInstallCommand(values)).toBe(
      "$b = (New-Object Net.WebClient).DownloadData('http://198.51.100.7:19091/install.ps1'); " +
        `if ((Get-FileHash -Algorithm SHA256 -InputStream ([IO.MemoryStream]::new($b))).Hash -ne '${'a'.repeat(64)}') ` +
        "{ throw 'iop: install.ps1 does not match the SHA-256 pinned in this line; not running it' }; " +
        'iex ([Text.Encoding]::UTF8.GetString($b)); ' +
        "Start-IopNode -NodeId 'node-01' -Token 't0k''en$`x`' -Edge '198.51.100.7:19090' " +
        `-EdgeFingerprint '${fingerprint}' -ArtifactUrl 'http://198.51.100.7:19091/artifacts'`,
    );
  });

  it('refuses a script hash that is not a SHA-256', () => {
    expect(() => unixInstallCommand({ ...values, scriptSha256: "x'; rm -rf /" })).toThrow('not a SHA-256');
  });
});
