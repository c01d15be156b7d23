// Finds the edge.yaml a command should use when --config is not given. Rule (see the config contract):
// 1. --config, 2. the IOP_EDGE_CONFIG environment variable, 3. bundle-local ./edge.yaml (the current
// directory), 4. edge.yaml next to the executable, 5. configs/edge.yaml of a repo checkout: walk up from the executable's directory to the first directory
//    holding pnpm-workspace.yaml. If none exists the bundle-local path is returned (so errors name it).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './errors.js';
import type { ResolveConfigPathInput, ResolvedConfigPath } from './types.js';

/** Environment variable naming the config file when --config is absent. */
export const CONFIG_ENV_VAR = 'IOP_EDGE_CONFIG';

/** Upper bound on directory levels walked looking for the repo root. */
const MAX_WALK_UP = 32;

export function resolveConfigPath(input: ResolveConfigPathInput): ResolvedConfigPath {
  const exists = input.exists ?? existsSync;
  if (input.explicit !== undefined) {
    if (input.explicit.trim() === '') throw new ConfigError('invalid_argument', '--config must not be empty');
    return { path: path.resolve(input.cwd, input.explicit), source: 'flag' };
  }
  const fromEnv = input.env[CONFIG_ENV_VAR];
  if (fromEnv !== undefined && fromEnv.trim() !== '')
    return { path: path.resolve(input.cwd, fromEnv), source: 'env' };
  const bundle = path.resolve(input.cwd, 'edge.yaml');
  if (exists(bundle)) return { path: bundle, source: 'bundle' };

  const execDir = path.dirname(path.resolve(input.cwd, input.execPath));
  const adjacent = path.join(execDir, 'edge.yaml');
  if (exists(adjacent)) return { path: adjacent, source: 'executable' };

  let dir = execDir;
  for (let level = 0; level < MAX_WALK_UP; level += 1) {
    if (exists(path.join(dir, 'pnpm-workspace.yaml'))) {
      const repoConfig = path.join(dir, 'configs', 'edge.yaml');
      if (exists(repoConfig)) return { path: repoConfig, source: 'repo' };
      break;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return { path: bundle, source: 'bundle' };
}
