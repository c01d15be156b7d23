import { spawnSync } from 'node:child_process';
import type os from 'node:os';
import { describe, expect, it } from '@jest/globals';
import type { EdgeConfig } from '@iop/config';
import { bootstrapPublicUrl, unixInstallCommand, windowsInstallCommand } from './bootstrap-urls.js';

function config(listen: string, publicUrl: string): EdgeConfig {
  return { bootstrap: { listen, public_url: publicUrl, artifact_dir: '/x' } } as unknown as EdgeConfig;
}

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
  const values = {
    publicUrl: 'http://198.51.100.7:19091',
    nodeId: 'node-01',
    token: "t0k'en$`x`",
    edgeAddress: '198.51.100.7:19090',
  };

  it('Linux/macOS: the token goes to bash through IOP_TOKEN, never as an argument', () => {
    const line = unixInstallCommand(values);
    expect(line).toBe(
      "curl -fsSL 'http://198.51.100.7:19091/install.sh' | IOP_TOKEN='t0k'\\''en$`x`' bash -s -- " +
        "--node-id 'node-01' --edge '198.51.100.7:19090' --artifact-url 'http://198.51.100.7:19091/artifacts'",
    );
    // What bash makes of the line: stand-ins for curl and bash print what they receive.
    const probe = line
      .replace(/^curl -fsSL '[^']*'/, 'printf %s script')
      .replace(' bash -s --', ' sh -c \'cat >/dev/null; printf "%s|" "$IOP_TOKEN" "$@"\' sh');
    const result = spawnSync('bash', ['-c', probe], { encoding: 'utf8' });
    expect(result.stdout.trim()).toBe(
      "t0k'en$`x`|--node-id|node-01|--edge|198.51.100.7:19090|--artifact-url|http://198.51.100.7:19091/artifacts|",
    );
  });

  it('Windows: loads install.ps1 into the session and calls Start-IopNode with verbatim literals', () => {
    expect(windowsInstallCommand(values)).toBe(
      "iex (irm 'http://198.51.100.7:19091/install.ps1'); Start-IopNode -NodeId 'node-01' " +
        "-Token 't0k''en$`x`' -Edge '198.51.100.7:19090' -ArtifactUrl 'http://198.51.100.7:19091/artifacts'",
    );
  });
});
