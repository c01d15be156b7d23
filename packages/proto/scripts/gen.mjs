// Regenerates src/gen from ../../proto with buf + ts-proto (both from npm, offline). Output is committed.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
rmSync(path.join(packageDir, 'src/gen'), { recursive: true, force: true });
execFileSync(
  path.join(packageDir, 'node_modules/.bin/buf'),
  ['generate', '../../proto', '--template', 'buf.gen.yaml'],
  {
    cwd: packageDir,
    stdio: 'inherit',
  },
);
