import { afterEach, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createProcessLauncher } from './process-launcher.js';
import { createProcessTreeControl } from './process-tree.js';
import { ProfileHealth, type ProbedProfile } from './profile-health.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory with executables: `ok` prints a version, `broken` exits 2, `slow` never answers. */
function bin(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'iop-profile-health-'));
  dirs.push(dir);
  const script = (name: string, body: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
  };
  script('ok', 'echo "ok-cli 1.2.3"; echo "$0 $1" >> "$(dirname "$0")/calls"');
  script('broken', 'echo "broken: missing runtime" >&2; exit 2');
  script('slow', 'sleep 30');
  return dir;
}

function health(now: () => number = () => 0, versionTimeoutMs = 10_000) {
  return new ProfileHealth({
    launcher: createProcessLauncher(),
    tree: createProcessTreeControl(),
    killGraceMs: 100,
    now,
    versionTimeoutMs,
  });
}

const profile = (name: string, command: string, dir: string): ProbedProfile => ({
  name,
  command,
  env: { PATH: `${dir}:/usr/bin:/bin` },
  cwd: dir,
});

describe('ProfileHealth', () => {
  it('is healthy when --version answers, and names the cause otherwise', async () => {
    const dir = bin();
    const result = await health().probe(
      [
        profile('good', 'ok', dir),
        profile('missing', 'no-such-cli', dir),
        profile('absolute-missing', '/nonexistent/cli', dir),
        profile('failing', 'broken', dir),
      ],
      new AbortController().signal,
    );
    expect(result['good']).toEqual({ health: 'healthy', detail: 'good: ok-cli 1.2.3' });
    expect(result['missing']).toEqual({
      health: 'unhealthy',
      cause: 'command_not_found',
      detail: 'profile missing: command no-such-cli was not found on its PATH',
    });
    expect(result['absolute-missing']).toMatchObject({ cause: 'command_not_found' });
    expect(result['failing']).toMatchObject({ health: 'unhealthy', cause: 'command_failed' });
    expect(result['failing']?.detail).toMatch(/--version exited 2 \(broken: missing runtime\)/);
  });

  it('is unhealthy when --version does not answer in time', async () => {
    const dir = bin();
    const result = await health(() => 0, 300).probe(
      [profile('hanging', 'slow', dir)],
      new AbortController().signal,
    );
    expect(result['hanging']).toMatchObject({ health: 'unhealthy', cause: 'command_failed' });
    expect(result['hanging']?.detail).toMatch(/did not answer within 300 ms/);
  });

  it('runs --version again only when the executable changes or the answer is old', async () => {
    const dir = bin();
    let now = 0;
    const probe = health(() => now);
    const calls = () => {
      try {
        return readFileSync(path.join(dir, 'calls'), 'utf8').split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    };
    const signal = new AbortController().signal;
    await probe.probe([profile('good', 'ok', dir)], signal);
    await probe.probe([profile('good', 'ok', dir)], signal);
    expect(calls()).toBe(1);
    utimesSync(path.join(dir, 'ok'), new Date(), new Date(Date.now() + 60_000));
    await probe.probe([profile('good', 'ok', dir)], signal);
    expect(calls()).toBe(2);
    now = 600_001;
    await probe.probe([profile('good', 'ok', dir)], signal);
    expect(calls()).toBe(3);
  });
});
