import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { INSTALL_PS1_TEMPLATE } from './install-ps1-template.js';
import { INSTALL_SH_TEMPLATE } from './install-sh-template.js';

// iop-node exits with status 3 when the edge closed it as `replaced` (another process registered with its
// identity); a supervisor that restarted it would make the two replace each other forever.
const EXIT_CODE_REPLACED = 3;

describe('node service unit', () => {
  it('does not restart a node that exited because it was replaced', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-unit-'));
    try {
      const script = path.join(dir, 'install.sh');
      fs.writeFileSync(script, INSTALL_SH_TEMPLATE);
      const result = spawnSync(
        'bash',
        ['-c', `source "$1"; iop_systemd_unit /bin/iop-node e:1 n /t /d user`, 'unit', script],
        { env: { ...process.env, IOP_INSTALL_LIBRARY_ONLY: '1' }, encoding: 'utf8' },
      );
      expect(result.status).toBe(0);
      const lines = result.stdout.split('\n');
      expect(lines).toContain('Restart=on-failure');
      expect(lines).toContain(`RestartPreventExitStatus=${EXIT_CODE_REPLACED}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes a replaced node exit 0 under launchd (KeepAlive restarts every non-zero status)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-unit-'));
    try {
      const script = path.join(dir, 'install.sh');
      fs.writeFileSync(script, INSTALL_SH_TEMPLATE);
      const result = spawnSync(
        'bash',
        ['-c', `source "$1"; iop_launchd_plist /bin/iop-node e:1 n /t /d /log`, 'plist', script],
        { env: { ...process.env, IOP_INSTALL_LIBRARY_ONLY: '1' }, encoding: 'utf8' },
      );
      expect(result.status).toBe(0);
      expect(result.stdout).toContain('<key>SuccessfulExit</key><false/>');
      expect(result.stdout).toContain('<string>--replaced-exit-code</string>\n    <string>0</string>');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes a replaced node exit 0 under the Windows scheduled task (its restart settings apply to failures)', () => {
    const service = INSTALL_PS1_TEMPLATE.slice(INSTALL_PS1_TEMPLATE.indexOf('if ($Service) {'));
    const argumentsLine = service.indexOf("$arguments += @('--replaced-exit-code', '0')");
    expect(argumentsLine).toBeGreaterThan(0);
    expect(argumentsLine).toBeLessThan(service.indexOf('New-ScheduledTaskAction'));
  });
});
