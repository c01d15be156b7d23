import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { SetupExecutor } from '../bootstrap/edge-setup.js';
import { memoryIo, type MemoryIo } from './test-support/memory-io.js';
import { createSetupCommand, hostExecutor } from './setup.js';

/** Records every call; `existing` paths exist (root-owned, 0755), `users` answer getent. */
function recordingExecutor(existing: string[] = [], users: string[] = [], artifacts: string[] = []) {
  const calls: string[] = [];
  const files = new Map<string, { content: string; mode: number }>();
  const executor: SetupExecutor = {
    exists: (file) => existing.includes(file),
    stat: (file) =>
      existing.includes(file) ? { uid: 0, mode: 0o755, isDirectory: !file.includes('.') } : undefined,
    listDir: (dir) => (dir === '/opt/iop-edge-0.1.0/artifacts' ? artifacts : []),
    ensureIdentity: (dir) => {
      calls.push(`identity ${dir}`);
      return Promise.resolve({ fingerprint: `sha256:${'0'.repeat(64)}`, created: true });
    },
    run: (command, args) => {
      calls.push(`run ${[command, ...args].join(' ')}`);
      if (command === 'getent')
        return Promise.resolve({ code: users.includes(args[1] ?? '') ? 0 : 2, output: '' });
      return Promise.resolve({ code: 0, output: '' });
    },
    mkdir: (dir, mode) => {
      calls.push(`mkdir ${dir} ${mode.toString(8)}`);
      return Promise.resolve();
    },
    writeFile: (file, content, mode) => {
      calls.push(`write ${file} ${mode.toString(8)}`);
      files.set(file, { content, mode });
      return Promise.resolve();
    },
    copyFile: (from, to, mode) => {
      calls.push(`copy ${from} ${to} ${mode.toString(8)}`);
      return Promise.resolve();
    },
  };
  return { executor, calls, files };
}

function io(): MemoryIo {
  return memoryIo('/opt/iop-edge-0.1.0', {}, '/opt/iop-edge-0.1.0/iop-edge');
}

const interfaces = () => ({
  eth0: [
    { address: '203.0.113.5', family: 'IPv4' as const, internal: false, netmask: '', mac: '', cidr: null },
  ],
});

describe('iop-edge setup', () => {
  it('--dry-run prints the whole plan and changes nothing, even as a normal user', async () => {
    const recorder = recordingExecutor();
    const command = createSetupCommand({
      executor: recorder.executor,
      uid: () => 1000,
      networkInterfaces: interfaces,
    });
    const terminal = io();
    const code = await command.run(
      ['--dry-run', '--enable', '--start', '--binary', '/usr/local/bin/iop-edge'],
      terminal.io,
    );
    expect(code).toBe(0);
    // Only read-only probes ran.
    expect(recorder.calls).toEqual(['run getent group iop', 'run getent passwd iop']);
    const lines = terminal
      .out()
      .split('\n')
      .filter((line) => line.startsWith('would '));
    expect(lines).toEqual([
      'would [1/16] create system group iop: groupadd --system iop',
      'would [2/16] create system user iop: useradd --system --gid iop --home-dir /var/lib/iop --no-create-home --shell /usr/sbin/nologin iop',
      'would [3/16] create data directory /var/lib/iop (0750)',
      'would [4/16] give the new /var/lib/iop to iop: chown iop:iop /var/lib/iop',
      'would [5/16] create config directory /etc/iop (0750)',
      'would [6/16] let group iop into the new /etc/iop: chown root:iop /etc/iop',
      'would [7/16] write config /etc/iop/edge.yaml (0640)',
      'would [8/16] let group iop read the config: chown root:iop /etc/iop/edge.yaml',
      "would [9/16] create the edge's TLS key /var/lib/iop/edge-key.pem (0600) and self-signed certificate /var/lib/iop/edge-cert.pem",
      'would [10/16] give the new key and certificate to iop: chown iop:iop /var/lib/iop/edge-key.pem /var/lib/iop/edge-cert.pem',
      'would [11/16] create /usr/local/bin (0755, root)',
      'would [12/16] install /opt/iop-edge-0.1.0/iop-edge as /usr/local/bin/iop-edge (0755, root)',
      'would [13/16] write systemd unit /etc/systemd/system/iop-edge.service (0644)',
      'would [14/16] reload systemd: systemctl daemon-reload',
      'would [15/16] enable at boot: systemctl enable iop-edge.service',
      'would [16/16] start now: systemctl restart iop-edge.service',
    ]);
    const output = terminal.out();
    expect(output).toContain(
      '      | ExecStart="/usr/local/bin/iop-edge" serve --config "/etc/iop/edge.yaml"',
    );
    expect(output).toContain('      | User=iop');
    expect(output).toContain('      | NoNewPrivileges=yes');
    expect(output).toContain('      | ProtectSystem=strict');
    expect(output).toContain('      | ReadWritePaths="/var/lib/iop"');
    expect(output).toContain('      |   public_url: "http://203.0.113.5:19091"');
    expect(output).toContain('      |   artifact_dir: "/usr/local/lib/iop-edge/artifacts"');
    expect(output).toContain(
      '      |   tls: { enabled: true, cert_file: "/var/lib/iop/edge-cert.pem", key_file: "/var/lib/iop/edge-key.pem" }',
    );
    expect(output).toContain('      |   data_dir: "/var/lib/iop"');
    // The new config's admin token is never shown, not even in a dry run.
    expect(output).toContain('admin_token: "<a new random admin token>"');
    expect(output).not.toMatch(/iop-admin-/);
    expect(output).toContain('dry run: nothing was changed');
  });

  it('keeps an existing config, user and binary; applies the rest in order as root', async () => {
    const recorder = recordingExecutor(
      ['/srv/iop', '/srv/iop/edge.yaml', '/usr/local/bin/iop-edge', '/var/lib/iop'],
      ['iop'],
      ['SHA256SUMS', 'iop-node-0.1.0-linux-amd64.tar.gz'],
    );
    const command = createSetupCommand({
      executor: recorder.executor,
      uid: () => 0,
      networkInterfaces: interfaces,
    });
    const terminal = io();
    const code = await command.run(
      ['--config', '/srv/iop/edge.yaml', '--binary', '/usr/local/bin/iop-edge', '--enable'],
      terminal.io,
    );
    expect(code).toBe(0);
    expect(recorder.calls).toEqual([
      'run getent group iop',
      'run getent passwd iop',
      'mkdir /usr/local/lib/iop-edge/artifacts 755',
      'copy /opt/iop-edge-0.1.0/artifacts/SHA256SUMS /usr/local/lib/iop-edge/artifacts/SHA256SUMS 644',
      'copy /opt/iop-edge-0.1.0/artifacts/iop-node-0.1.0-linux-amd64.tar.gz /usr/local/lib/iop-edge/artifacts/iop-node-0.1.0-linux-amd64.tar.gz 644',
      'write /etc/systemd/system/iop-edge.service 644',
      'run systemctl daemon-reload',
      'run systemctl enable iop-edge.service',
    ]);
    expect(terminal.out()).toContain(
      'keep existing config /srv/iop/edge.yaml (--overwrite-config replaces it)',
    );
    expect(recorder.files.get('/etc/systemd/system/iop-edge.service')?.content).toContain(
      'ExecStart="/usr/local/bin/iop-edge" serve --config "/srv/iop/edge.yaml"',
    );
  });

  it('overwrites the config only with --overwrite-config', async () => {
    const recorder = recordingExecutor(['/etc/iop/edge.yaml'], ['iop']);
    const command = createSetupCommand({
      executor: recorder.executor,
      uid: () => 0,
      networkInterfaces: interfaces,
    });
    await command.run(['--overwrite-config', '--public-url', 'http://edge.example:19091'], io().io);
    expect(recorder.calls).toContain('write /etc/iop/edge.yaml 640');
    const written = recorder.files.get('/etc/iop/edge.yaml')?.content ?? '';
    expect(written).toContain('public_url: "http://edge.example:19091"');
    // A fresh admin token (root and the iop group read the 0640 config; nobody else).
    expect(written).toMatch(/admin_token: "iop-admin-[A-Za-z0-9_-]{43}"/);
  });

  it('refuses to change the system without root, and stops at a failed step', async () => {
    const recorder = recordingExecutor();
    const terminal = io();
    const code = await createSetupCommand({
      executor: recorder.executor,
      uid: () => 1000,
      networkInterfaces: interfaces,
    }).run([], terminal.io);
    expect(code).toBe(1);
    expect(terminal.err()).toContain('run it with sudo');
    expect(recorder.calls).toEqual([]);

    const failing = recordingExecutor();
    failing.executor.run = (command) =>
      Promise.resolve(
        command === 'groupadd'
          ? { code: 9, output: 'groupadd: group exists\n' }
          : { code: command === 'getent' ? 2 : 0, output: '' },
      );
    await expect(
      createSetupCommand({ executor: failing.executor, uid: () => 0, networkInterfaces: interfaces }).run(
        [],
        io().io,
      ),
    ).rejects.toMatchObject({
      code: 'setup_failed',
      message: expect.stringContaining('groupadd --system iop exited 9'),
    });
  });

  it('refuses relative or unquotable paths', async () => {
    const command = createSetupCommand({
      executor: recordingExecutor().executor,
      uid: () => 0,
      networkInterfaces: interfaces,
    });
    await expect(command.run(['--dry-run', '--data-dir', '/var/lib/my iop'], io().io)).rejects.toMatchObject({
      code: 'invalid_value',
    });
  });

  it.each([
    [['--config', '/etc/edge.yaml'], '--config (its directory) /etc is a system directory'],
    [['--data-dir', '/var/lib'], '--data-dir /var/lib is a system directory'],
    [['--data-dir', '/'], '--data-dir / is a system directory'],
    [['--config', '/usr/local/edge.yaml'], '/usr/local is a system directory'],
    [['--data-dir', '/home/alice/iop'], 'the service cannot see (ProtectHome=yes)'],
    [['--binary', '/home/alice/iop-edge'], '--binary /home/alice/iop-edge is under a home directory'],
  ])('refuses %j even in a dry run', async (flags, message) => {
    const command = createSetupCommand({
      executor: recordingExecutor().executor,
      uid: () => 1000,
      networkInterfaces: interfaces,
    });
    await expect(command.run(['--dry-run', ...flags], io().io)).rejects.toMatchObject({
      code: 'invalid_value',
      message: expect.stringContaining(message),
    });
  });

  it('refuses an existing top-level directory as data dir, and a binary a normal user could replace', async () => {
    const command = createSetupCommand({
      executor: recordingExecutor(['/data']).executor,
      uid: () => 0,
      networkInterfaces: interfaces,
    });
    await expect(command.run(['--dry-run', '--data-dir', '/data'], io().io)).rejects.toMatchObject({
      message: expect.stringContaining('/data is a system directory'),
    });
    const userOwned = recordingExecutor(['/usr/local/lib/iop-edge/iop-edge']);
    userOwned.executor.stat = () => ({ uid: 1000, mode: 0o755, isDirectory: false });
    await expect(
      createSetupCommand({ executor: userOwned.executor, uid: () => 0, networkInterfaces: interfaces }).run(
        ['--dry-run'],
        io().io,
      ),
    ).rejects.toMatchObject({ message: expect.stringContaining('owned by uid 1000') });
  });

  it('never issues chown or chmod on a directory that existed before it ran, and never chown -R', async () => {
    const existingDirs = [
      '/etc/iop',
      '/var/lib/iop',
      '/usr/local/lib/iop-edge',
      '/usr/local/lib/iop-edge/artifacts',
    ];
    const recorder = recordingExecutor(existingDirs, ['iop'], ['SHA256SUMS']);
    const terminal = io();
    const code = await createSetupCommand({
      executor: recorder.executor,
      uid: () => 0,
      networkInterfaces: interfaces,
    }).run([], terminal.io);
    expect(code).toBe(0);
    for (const dir of existingDirs) {
      expect(
        recorder.calls.filter((call) => call.startsWith('mkdir ') && call.split(' ')[1] === dir),
      ).toEqual([]);
      expect(
        recorder.calls.filter((call) => /^run (chown|chmod) /.test(call) && call.split(' ').includes(dir)),
      ).toEqual([]);
    }
    expect(recorder.calls.some((call) => call.includes(' -R '))).toBe(false);
    // What it created it may hand over: the config file, the new key and certificate.
    expect(recorder.calls).toEqual([
      'run getent group iop',
      'run getent passwd iop',
      'write /etc/iop/edge.yaml 640',
      'run chown root:iop /etc/iop/edge.yaml',
      'identity /var/lib/iop',
      'run chown iop:iop /var/lib/iop/edge-key.pem /var/lib/iop/edge-cert.pem',
      'copy /opt/iop-edge-0.1.0/iop-edge /usr/local/lib/iop-edge/iop-edge 755',
      'copy /opt/iop-edge-0.1.0/artifacts/SHA256SUMS /usr/local/lib/iop-edge/artifacts/SHA256SUMS 644',
      'write /etc/systemd/system/iop-edge.service 644',
      'run systemctl daemon-reload',
    ]);
    expect(terminal.out()).toContain('keep existing data directory /var/lib/iop (owner and mode unchanged');
    expect(recorder.files.get('/etc/systemd/system/iop-edge.service')?.content).toContain(
      'ExecStart="/usr/local/lib/iop-edge/iop-edge" serve --config "/etc/iop/edge.yaml"',
    );
  });

  it('the host executor chmods only a directory it created', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-setup-mkdir-'));
    try {
      fs.chmodSync(root, 0o755);
      await hostExecutor.mkdir(root, 0o700);
      expect(fs.statSync(root).mode & 0o777).toBe(0o755);
      const fresh = path.join(root, 'fresh');
      await hostExecutor.mkdir(fresh, 0o750);
      expect(fs.statSync(fresh).mode & 0o777).toBe(0o750);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
