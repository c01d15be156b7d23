import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConfigError } from './errors.js';
import { resolveConfigPath } from './resolve-config-path.js';

const cwd = '/home/op/bundle';
const execPath = '/opt/iop/repo/apps/edge/bin/iop-edge';

function existing(...files: string[]): (file: string) => boolean {
  const set = new Set(files);
  return (file) => set.has(file);
}

describe('resolveConfigPath', () => {
  it('uses --config first, resolved against the current directory', () => {
    const exists = existing(path.join(cwd, 'edge.yaml'));
    expect(
      resolveConfigPath({
        explicit: 'conf/x.yaml',
        cwd,
        execPath,
        env: { IOP_EDGE_CONFIG: '/e.yaml' },
        exists,
      }),
    ).toEqual({
      path: path.join(cwd, 'conf/x.yaml'),
      source: 'flag',
    });
  });

  it('rejects an empty --config value', () => {
    expect(() => resolveConfigPath({ explicit: ' ', cwd, execPath, env: {} })).toThrow(ConfigError);
  });

  it('uses IOP_EDGE_CONFIG when no flag is given, even if the file does not exist yet', () => {
    expect(
      resolveConfigPath({ cwd, execPath, env: { IOP_EDGE_CONFIG: 'env.yaml' }, exists: existing() }),
    ).toEqual({
      path: path.join(cwd, 'env.yaml'),
      source: 'env',
    });
  });

  it('prefers the bundle-local ./edge.yaml over the executable-adjacent and repo files', () => {
    const exists = existing(
      path.join(cwd, 'edge.yaml'),
      '/opt/iop/repo/apps/edge/bin/edge.yaml',
      '/opt/iop/repo/pnpm-workspace.yaml',
      '/opt/iop/repo/configs/edge.yaml',
    );
    expect(resolveConfigPath({ cwd, execPath, env: {}, exists })).toEqual({
      path: path.join(cwd, 'edge.yaml'),
      source: 'bundle',
    });
  });

  it('falls back to edge.yaml next to the executable', () => {
    const exists = existing(
      '/opt/iop/repo/apps/edge/bin/edge.yaml',
      '/opt/iop/repo/pnpm-workspace.yaml',
      '/opt/iop/repo/configs/edge.yaml',
    );
    expect(resolveConfigPath({ cwd, execPath, env: {}, exists })).toEqual({
      path: '/opt/iop/repo/apps/edge/bin/edge.yaml',
      source: 'executable',
    });
  });

  it('then walks up from the executable to the repo root (pnpm-workspace.yaml) and uses its configs/edge.yaml', () => {
    const exists = existing('/opt/iop/repo/pnpm-workspace.yaml', '/opt/iop/repo/configs/edge.yaml');
    expect(resolveConfigPath({ cwd, execPath, env: {}, exists })).toEqual({
      path: '/opt/iop/repo/configs/edge.yaml',
      source: 'repo',
    });
  });

  it('names the bundle-local path when nothing exists, so the error points where a config is expected', () => {
    const exists = existing('/opt/iop/repo/pnpm-workspace.yaml');
    expect(resolveConfigPath({ cwd, execPath, env: {}, exists })).toEqual({
      path: path.join(cwd, 'edge.yaml'),
      source: 'bundle',
    });
  });

  it('resolves a relative executable path against the current directory', () => {
    const exists = existing(path.join(cwd, 'bin', 'edge.yaml'));
    expect(resolveConfigPath({ cwd, execPath: 'bin/iop-edge', env: {}, exists })).toEqual({
      path: path.join(cwd, 'bin', 'edge.yaml'),
      source: 'executable',
    });
  });
});
