import { describe, expect, it } from '@jest/globals';
import type { SetupExecutor } from '../bootstrap/edge-setup.js';
import { memoryIo, type MemoryIo } from './test-support/memory-io.js';
import { createSetupCommand } from './setup.js';

/** Records every call; `existing` paths exist, `users` answer getent. */
function recordingExecutor(existing: string[] = [], users: string[] = []) {
  const calls: string[] = [];
  const files = new Map<string, { content: string; mode: number }>();
  const executor: SetupExecutor = {
    exists: (file) => existing.includes(file),
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
      'would [1/12] create system group iop: groupadd --system iop',
      'would [2/12] create system user iop: useradd --system --gid iop --home-dir /var/lib/iop --no-create-home --shell /usr/sbin/nologin iop',
      'would [3/12] create data directory /var/lib/iop (0750)',
      'would [4/12] give /var/lib/iop to iop: chown -R iop:iop /var/lib/iop',
      'would [5/12] create config directory /etc/iop (0750)',
      'would [6/12] write config /etc/iop/edge.yaml (0640)',
      'would [7/12] let group iop read the config: chown -R root:iop /etc/iop',
      'would [8/12] install /opt/iop-edge-0.1.0/iop-edge as /usr/local/bin/iop-edge (0755)',
      'would [9/12] write systemd unit /etc/systemd/system/iop-edge.service (0644)',
      'would [10/12] reload systemd: systemctl daemon-reload',
      'would [11/12] enable at boot: systemctl enable iop-edge.service',
      'would [12/12] start now: systemctl restart iop-edge.service',
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
    expect(output).toContain('      |   artifact_dir: "/opt/iop-edge-0.1.0/artifacts"');
    expect(output).toContain('      |   data_dir: "/var/lib/iop"');
    expect(output).toContain('dry run: nothing was changed');
  });

  it('keeps an existing config, user and binary; applies the rest in order as root', async () => {
    const recorder = recordingExecutor(['/srv/iop/edge.yaml', '/usr/local/bin/iop-edge'], ['iop']);
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
      'mkdir /var/lib/iop 750',
      'run chown -R iop:iop /var/lib/iop',
      'mkdir /srv/iop 750',
      'run chown -R root:iop /srv/iop',
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
    expect(recorder.files.get('/etc/iop/edge.yaml')?.content).toContain(
      'public_url: "http://edge.example:19091"',
    );
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
});
