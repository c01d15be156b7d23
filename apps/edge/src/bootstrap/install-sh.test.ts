// install.sh as rendered for an edge: syntax, quoting of tricky values, and its functions run under bash with a
// fake `uname`/`id` on PATH, plus a whole install from file:// artifacts with a stand-in agent.
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { renderInstallSh } from './install-scripts.js';

const fingerprint = `sha256:${'ab'.repeat(32)}`;
const values = {
  version: '0.1.0',
  artifactUrl: 'http://192.0.2.10:19091/artifacts',
  edgeAddress: '192.0.2.10:19090',
  edgeFingerprint: fingerprint,
  artifacts: [] as { file: string; sha256: string }[],
};

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-install-sh-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function writeScript(text: string): string {
  const file = path.join(dir, 'install.sh');
  fs.writeFileSync(file, text);
  return file;
}

/** A bin folder with fake uname (and id) answering fixed values, first on PATH. */
function fakeTools(uname: { s: string; m: string }, uid = '1000'): string {
  const bin = path.join(dir, 'fake-bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(
    path.join(bin, 'uname'),
    `#!/bin/sh\ncase "$1" in -s) echo '${uname.s}' ;; -m) echo '${uname.m}' ;; *) echo '${uname.s}' ;; esac\n`,
    { mode: 0o755 },
  );
  fs.writeFileSync(
    path.join(bin, 'id'),
    `#!/bin/sh\ncase "$1" in -u) echo ${uid} ;; *) echo tester ;; esac\n`,
    {
      mode: 0o755,
    },
  );
  return bin;
}

/** Sources the script as a library and runs `snippet`; returns status, stdout and stderr. */
function runLibrary(script: string, snippet: string, env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync('bash', ['-c', `source "$1"; ${snippet}`, 'test', script], {
    env: { PATH: process.env['PATH'], HOME: dir, IOP_INSTALL_LIBRARY_ONLY: '1', ...env },
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('install.sh rendering', () => {
  it('passes bash -n and sh -n and leaves no placeholder', () => {
    const script = writeScript(renderInstallSh(values));
    execFileSync('bash', ['-n', script]);
    execFileSync('sh', ['-n', script]);
    expect(fs.readFileSync(script, 'utf8')).not.toMatch(/__IOP_/);
  });

  it.each([
    ['spaces and quotes', 'http://edge.example:19091/my artifacts/it\'s "here"'],
    ['dollar and backticks', 'http://edge.example:19091/$HOME/`id`/$(whoami)/${PATH}'],
    ['backslashes and globs', 'http://edge.example:19091/a\\b/*/?[x]'],
  ])('keeps an artifact URL with %s literal', (_label, artifactUrl) => {
    const script = writeScript(renderInstallSh({ ...values, artifactUrl }));
    execFileSync('bash', ['-n', script]);
    const result = runLibrary(
      script,
      'printf "%s|%s|%s" "$IOP_VERSION" "$IOP_DEFAULT_ARTIFACT_URL" "$IOP_DEFAULT_EDGE"',
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`0.1.0|${artifactUrl}|192.0.2.10:19090`);
  });

  it('refuses values it cannot place safely', () => {
    expect(() => renderInstallSh({ ...values, artifactUrl: 'http://edge/\nrm -rf /' })).toThrow(
      expect.objectContaining({ code: 'invalid_value' }),
    );
    expect(() => renderInstallSh({ ...values, version: "1.0'; rm -rf /" })).toThrow(
      expect.objectContaining({ code: 'invalid_value' }),
    );
    expect(() => renderInstallSh({ ...values, edgeAddress: 'host only' })).toThrow(
      expect.objectContaining({ code: 'invalid_value' }),
    );
    expect(() => renderInstallSh({ ...values, artifactUrl: 'ftp://edge/artifacts' })).toThrow(
      expect.objectContaining({ code: 'invalid_value' }),
    );
  });
});

describe('install.sh platform detection', () => {
  it.each([
    ['Linux', 'x86_64', 'linux amd64'],
    ['Linux', 'aarch64', 'linux arm64'],
    ['Darwin', 'arm64', 'darwin arm64'],
    ['Darwin', 'x86_64', 'darwin amd64'],
  ])('maps %s %s to %s', (s, m, expected) => {
    const script = writeScript(renderInstallSh(values));
    const bin = fakeTools({ s, m });
    const result = runLibrary(script, 'echo "$(iop_detect_os) $(iop_detect_arch)"', {
      PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    });
    expect(result.stdout.trim()).toBe(expected);
    const name = runLibrary(script, `iop_artifact_name ${expected}`).stdout.trim();
    expect(name).toBe(`iop-node-0.1.0-${expected.replace(' ', '-')}.tar.gz`);
  });

  it.each([
    ['FreeBSD', 'amd64', /unsupported operating system 'FreeBSD'/],
    ['MINGW64_NT-10.0', 'x86_64', /use the PowerShell line/],
    ['Linux', 'i686', /unsupported CPU architecture 'i686'/],
    ['Linux', 'armv7l', /unsupported CPU architecture 'armv7l'/],
  ])('refuses %s %s with a clear error', (s, m, message) => {
    const script = writeScript(renderInstallSh(values));
    const bin = fakeTools({ s, m });
    const result = runLibrary(script, 'iop_detect_os >/dev/null && iop_detect_arch >/dev/null', {
      PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(message);
  });

  it('installs under /opt/iop as root, ~/.iop otherwise, IOP_HOME first', () => {
    const script = writeScript(renderInstallSh(values));
    const user = fakeTools({ s: 'Linux', m: 'x86_64' }, '1000');
    expect(
      runLibrary(script, 'iop_install_root', { PATH: `${user}:${process.env['PATH'] ?? ''}` }).stdout.trim(),
    ).toBe(`${dir}/.iop`);
    fs.rmSync(path.join(dir, 'fake-bin'), { recursive: true });
    const root = fakeTools({ s: 'Linux', m: 'x86_64' }, '0');
    expect(
      runLibrary(script, 'iop_install_root', { PATH: `${root}:${process.env['PATH'] ?? ''}` }).stdout.trim(),
    ).toBe('/opt/iop');
    expect(runLibrary(script, 'iop_install_root', { IOP_HOME: '/srv/iop' }).stdout.trim()).toBe('/srv/iop');
  });
});

describe('install.sh checksum verification (SHA-256 values carried by the script)', () => {
  const sha256 = (content: string) => crypto.createHash('sha256').update(content).digest('hex');

  it('accepts the SHA-256 the script carries for the artifact', () => {
    const script = writeScript(
      renderInstallSh({
        ...values,
        artifacts: [
          { file: 'other.tar.gz', sha256: '0'.repeat(64) },
          { file: 'a.tar.gz', sha256: sha256('artifact bytes') },
        ],
      }),
    );
    fs.writeFileSync(path.join(dir, 'a.tar.gz'), 'artifact bytes');
    expect(runLibrary(script, `iop_verify "${dir}/a.tar.gz" a.tar.gz && echo ok`).stdout).toBe('ok\n');
  });

  it('fails on a mismatch and on a file the script does not list', () => {
    const script = writeScript(
      renderInstallSh({ ...values, artifacts: [{ file: 'a.tar.gz', sha256: sha256('artifact bytes') }] }),
    );
    fs.writeFileSync(path.join(dir, 'a.tar.gz'), 'tampered bytes');
    const mismatch = runLibrary(script, `iop_verify "${dir}/a.tar.gz" a.tar.gz`);
    expect(mismatch.status).toBe(1);
    expect(mismatch.stderr).toMatch(
      /checksum mismatch for a\.tar\.gz: expected [0-9a-f]{64}, got [0-9a-f]{64}/,
    );
    const missing = runLibrary(script, `iop_verify "${dir}/a.tar.gz" b.tar.gz`);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/b\.tar\.gz is not among this edge's artifacts/);
  });

  it('refuses checksum entries and fingerprints it cannot place safely', () => {
    expect(() =>
      renderInstallSh({ ...values, artifacts: [{ file: "a'; rm -rf /", sha256: '0'.repeat(64) }] }),
    ).toThrow(expect.objectContaining({ code: 'invalid_value' }));
    expect(() => renderInstallSh({ ...values, edgeFingerprint: "sha256:'x" })).toThrow(
      expect.objectContaining({ code: 'invalid_value' }),
    );
  });

  it('reports a failed download with its URL', () => {
    const script = writeScript(renderInstallSh(values));
    const result = runLibrary(script, `iop_download "file://${dir}/absent.tar.gz" "${dir}/out"`);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`download failed: file://${dir}/absent.tar.gz`);
  });
});

describe('install.sh service definitions', () => {
  it('quotes systemd ExecStart words and keeps the token out of the unit', () => {
    const script = writeScript(renderInstallSh(values));
    const result = runLibrary(
      script,
      `iop_systemd_unit "/home/a b/.iop/bin/iop-node" "edge:19090" 'node-1' '/home/a\\b/100%/$x"q".token' /data user`,
    );
    const exec = result.stdout.split('\n').find((line) => line.startsWith('ExecStart='));
    expect(exec).toBe(
      'ExecStart="/home/a b/.iop/bin/iop-node" "run" "--edge" "edge:19090" "--node-id" "node-1" ' +
        '"--token-file" "/home/a\\\\b/100%%/$$x\\"q\\".token" "--data-dir" "/data"',
    );
    expect(result.stdout).toContain('WantedBy=default.target');
    expect(result.stdout).not.toContain('User=');
    expect(result.stdout).not.toContain('--agent-user');
    const system = runLibrary(
      script,
      `iop_systemd_unit b e n t /var/d system ${fingerprint} /var/w /var/h`,
    ).stdout;
    expect(system).toContain('WantedBy=multi-user.target');
    expect(system).toContain(
      `"--data-dir" "/var/d" "--edge-fingerprint" "${fingerprint}" "--agent-user" "iop-agent"`,
    );
    // The node runs as root with four capabilities; agents (iop-agent) in the workspaces dir.
    expect(system).not.toMatch(/^User=/m);
    for (const line of [
      'WorkingDirectory="/var/w"',
      'ProtectSystem=full',
      'ReadWritePaths="/var/d" "/var/w" "/var/h"',
      'CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL CAP_DAC_READ_SEARCH',
      'AmbientCapabilities=',
      'NoNewPrivileges=yes',
    ])
      expect(system.split('\n')).toContain(line);
  });

  it('escapes launchd plist strings', () => {
    const script = writeScript(renderInstallSh(values));
    const result = runLibrary(script, `iop_launchd_plist "/Users/a&b/bin/iop-node" "e:1" "n<1>" /t /d /log`);
    expect(result.stdout).toContain('<string>/Users/a&amp;b/bin/iop-node</string>');
    expect(result.stdout).toContain('<string>n&lt;1&gt;</string>');
    expect(result.stdout).toContain('<key>Label</key><string>dev.iop.node</string>');
  });
});

describe('install.sh end to end (file:// artifacts, stand-in agent)', () => {
  /** An artifact whose bin/iop-node records its arguments, environment and the token file's mode. */
  function buildArtifact(name: string): typeof values {
    const folder = name.replace(/\.tar\.gz$/, '');
    const root = path.join(dir, 'stage', folder);
    fs.mkdirSync(path.join(root, 'bin'), { recursive: true });
    fs.writeFileSync(
      path.join(root, 'bin', 'iop-node'),
      [
        '#!/bin/sh',
        'if [ "$1" = version ]; then echo "iop-node stand-in"; exit 0; fi',
        `printf '%s\\n' "$@" > "${dir}/agent-args"`,
        `env > "${dir}/agent-env"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    fs.mkdirSync(path.join(dir, 'served'), { recursive: true });
    execFileSync('tar', ['-czf', path.join(dir, 'served', name), '-C', path.join(dir, 'stage'), folder]);
    const sha256 = crypto
      .createHash('sha256')
      .update(fs.readFileSync(path.join(dir, 'served', name)))
      .digest('hex');
    return { ...values, artifacts: [{ file: name, sha256 }] };
  }

  it('installs, writes the token file 0600 and starts the agent with --token-file only', () => {
    const name = 'iop-node-0.1.0-linux-amd64.tar.gz';
    const rendered = buildArtifact(name);
    const bin = fakeTools({ s: 'Linux', m: 'x86_64' });
    const script = writeScript(renderInstallSh(rendered));
    const token = "tok-'$(id)`x`";
    const result = spawnSync(
      'bash',
      [script, '--node-id', 'node-7', '--artifact-url', `file://${dir}/served/`],
      {
        env: { PATH: `${bin}:${process.env['PATH'] ?? ''}`, HOME: path.join(dir, 'home'), IOP_TOKEN: token },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(result.stderr).toContain('SHA-256 verified');
    expect(result.status).toBe(0);
    const root = path.join(dir, 'home', '.iop');
    const tokenFile = path.join(root, 'node.token');
    expect(fs.readFileSync(tokenFile, 'utf8')).toBe(`${token}\n`);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(fs.readlinkSync(path.join(root, 'bin', 'iop-node'))).toBe(
      '../versions/iop-node-0.1.0-linux-amd64/bin/iop-node',
    );
    const args = fs.readFileSync(path.join(dir, 'agent-args'), 'utf8').trim().split('\n');
    expect(args).toEqual([
      'run',
      '--edge',
      '192.0.2.10:19090',
      '--node-id',
      'node-7',
      '--token-file',
      tokenFile,
      '--data-dir',
      path.join(root, 'node'),
      '--edge-fingerprint',
      fingerprint,
    ]);
    const env = fs.readFileSync(path.join(dir, 'agent-env'), 'utf8');
    expect(env).not.toContain('tok-');
    expect(fs.readdirSync(root).filter((entry) => entry.startsWith('.download'))).toEqual([]);
  });

  it('stops before installing when the artifact does not match the SHA-256 the script carries', () => {
    const name = 'iop-node-0.1.0-linux-amd64.tar.gz';
    const rendered = buildArtifact(name);
    fs.appendFileSync(path.join(dir, 'served', name), 'x');
    const bin = fakeTools({ s: 'Linux', m: 'x86_64' });
    const script = writeScript(renderInstallSh(rendered));
    const result = spawnSync(
      'bash',
      [script, '--node-id', 'node-7', '--artifact-url', `file://${dir}/served`],
      {
        env: {
          PATH: `${bin}:${process.env['PATH'] ?? ''}`,
          HOME: path.join(dir, 'home'),
          IOP_TOKEN: 'secret',
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/checksum mismatch for iop-node-0\.1\.0-linux-amd64\.tar\.gz/);
    expect(fs.existsSync(path.join(dir, 'home', '.iop', 'node.token'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'home', '.iop', 'versions'))).toBe(false);
  });

  it('--service writes a systemd user unit without the token and enables it', () => {
    const name = 'iop-node-0.1.0-linux-amd64.tar.gz';
    const rendered = buildArtifact(name);
    const bin = fakeTools({ s: 'Linux', m: 'x86_64' });
    fs.writeFileSync(path.join(bin, 'systemctl'), `#!/bin/sh\necho "$@" >> "${dir}/systemctl-calls"\n`, {
      mode: 0o755,
    });
    const script = writeScript(renderInstallSh(rendered));
    const result = spawnSync(
      'bash',
      [script, '--node-id', 'node-7', '--artifact-url', `file://${dir}/served`, '--service'],
      {
        env: {
          PATH: `${bin}:${process.env['PATH'] ?? ''}`,
          HOME: path.join(dir, 'home'),
          XDG_CONFIG_HOME: path.join(dir, 'config'),
          IOP_TOKEN: 'secret-token',
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(result.status).toBe(0);
    // A user install cannot separate its agents: it says so, and the unit names no agent user.
    expect(result.stderr).toContain("CLI agents run as tester, the node's own user, and can read its token");
    const unit = fs.readFileSync(path.join(dir, 'config', 'systemd', 'user', 'iop-node.service'), 'utf8');
    expect(unit).not.toContain('--agent-user');
    expect(unit).toContain(`"--token-file" "${path.join(dir, 'home', '.iop', 'node.token')}"`);
    expect(unit).not.toContain('secret-token');
    expect(fs.readFileSync(path.join(dir, 'systemctl-calls'), 'utf8')).toBe(
      '--user daemon-reload\n--user enable --now iop-node.service\n',
    );
    // Not started in the foreground.
    expect(fs.existsSync(path.join(dir, 'agent-args'))).toBe(false);
  });

  it('--service as root makes the iop-agent user and its workspaces; token and data dir stay root-only', () => {
    const name = 'iop-node-0.1.0-linux-amd64.tar.gz';
    const rendered = buildArtifact(name);
    const bin = fakeTools({ s: 'Linux', m: 'x86_64' }, '0');
    const record = (tool: string) =>
      fs.writeFileSync(path.join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> "${dir}/calls"\n`, {
        mode: 0o755,
      });
    // id: uid 0 for the installer, and no iop-agent user yet.
    fs.writeFileSync(
      path.join(bin, 'id'),
      '#!/bin/sh\ncase "$1 $2" in "-u iop-agent") exit 1 ;; "-u ") echo 0 ;; *) echo root ;; esac\n',
      { mode: 0o755 },
    );
    for (const tool of ['useradd', 'chown', 'systemctl']) record(tool);
    const script = writeScript(renderInstallSh(rendered));
    const root = path.join(dir, 'opt');
    const result = spawnSync(
      'bash',
      [script, '--node-id', 'node-7', '--artifact-url', `file://${dir}/served`, '--service'],
      {
        env: {
          PATH: `${bin}:${process.env['PATH'] ?? ''}`,
          HOME: path.join(dir, 'home'),
          IOP_HOME: root,
          IOP_SYSTEMD_SYSTEM_DIR: path.join(dir, 'units'),
          IOP_TOKEN: 'secret-token',
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(result.stderr).toContain('created system user iop-agent');
    expect(result.status).toBe(0);
    const calls = fs.readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n');
    const workspaces = path.join(root, 'workspaces');
    const agentHome = path.join(root, 'agent-home');
    expect(calls[0]).toMatch(
      /^useradd --system --user-group --home-dir (\S+) --no-create-home --shell \S+ iop-agent$/,
    );
    expect(calls[0]?.split(' ')[4]).toBe(agentHome);
    // The agent owns its home and workspaces; the node's token and data dir are root's; never bin/ or versions/.
    expect(calls[1]).toBe(`chown iop-agent:iop-agent ${agentHome} ${workspaces}`);
    expect(calls[2]).toBe(`chown -R root:root ${path.join(root, 'node.token')} ${path.join(root, 'node')}`);
    expect(calls.filter((call) => call.startsWith('chown'))).toHaveLength(2);
    expect(calls.slice(3)).toEqual(['systemctl daemon-reload', 'systemctl enable --now iop-node.service']);
    expect(fs.statSync(path.join(root, 'node.token')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(root, 'node')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(agentHome).mode & 0o777).toBe(0o700);
    expect(fs.statSync(workspaces).mode & 0o777).toBe(0o711);
    expect(result.stderr).toContain(`CLI agents run as iop-agent in ${workspaces}`);
    const unit = fs.readFileSync(path.join(dir, 'units', 'iop-node.service'), 'utf8');
    expect(unit).not.toMatch(/^User=/m);
    expect(unit).toContain(`WorkingDirectory="${workspaces}"\n`);
    expect(unit).toContain('"--agent-user" "iop-agent"');
    expect(unit).toContain(`"--edge-fingerprint" "${fingerprint}"`);
    expect(unit).toContain('NoNewPrivileges=yes');
    expect(unit).not.toContain('secret-token');
  });

  it('refuses a token given as an argument and a missing token', () => {
    const script = writeScript(renderInstallSh(values));
    const argument = spawnSync('bash', [script, '--node-id', 'n', '--token', 'secret'], {
      env: { PATH: process.env['PATH'], HOME: dir },
      encoding: 'utf8',
    });
    expect(argument.status).toBe(1);
    expect(argument.stderr).toMatch(/not accepted as an argument/);
    const missing = spawnSync('bash', [script, '--node-id', 'n'], {
      env: { PATH: process.env['PATH'], HOME: dir },
      encoding: 'utf8',
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no token: set IOP_TOKEN/);
  });
});
