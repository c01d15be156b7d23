import { describe, expect, it } from '@jest/globals';
import { probeClis } from './cli-probe.js';
import { fakeProbeDeps } from './test-support/fake-probe-deps.js';

const options = () => ({ timeoutMs: 100, signal: new AbortController().signal });

describe('probeClis', () => {
  it('lists the known CLIs found on PATH with the first line of `--version`, and runs nothing else', async () => {
    const deps = fakeProbeDeps({
      executables: { claude: '/usr/local/bin/claude', codex: '/home/u/.npm/bin/codex', git: '/usr/bin/git' },
      exec: {
        '/usr/local/bin/claude --version': { stdout: '2.0.14 (Claude Code)\n' },
        '/home/u/.npm/bin/codex --version': { stdout: '\ncodex-cli 0.46.0\nextra\n' },
      },
    });
    await expect(probeClis(deps, options())).resolves.toEqual([
      { name: 'claude', path: '/usr/local/bin/claude', version: '2.0.14 (Claude Code)' },
      { name: 'codex', path: '/home/u/.npm/bin/codex', version: 'codex-cli 0.46.0' },
    ]);
    expect(deps.executed.sort()).toEqual([
      '/home/u/.npm/bin/codex --version',
      '/usr/local/bin/claude --version',
    ]);
  });

  it('keeps a CLI whose --version hangs or fails, with an empty version, after the deadline', async () => {
    const deps = fakeProbeDeps({
      executables: { agy: '/opt/agy', cline: '/opt/cline' },
      exec: { '/opt/agy --version': 'hang', '/opt/cline --version': { code: 2, stderr: 'unknown flag' } },
    });
    const started = Date.now();
    await expect(probeClis(deps, options())).resolves.toEqual([
      { name: 'cline', path: '/opt/cline', version: '' },
      { name: 'agy', path: '/opt/agy', version: '' },
    ]);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('reads the version from stderr when stdout is empty', async () => {
    const deps = fakeProbeDeps({
      executables: { opencode: '/bin/opencode' },
      exec: { '/bin/opencode --version': { stdout: '', stderr: '0.15.8\n' } },
    });
    expect(await probeClis(deps, options())).toEqual([
      { name: 'opencode', path: '/bin/opencode', version: '0.15.8' },
    ]);
  });
});
