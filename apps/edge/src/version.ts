// The build's version, stamped at build time by the release build (IOP_VERSION), else the package version.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function packageVersion(): string {
  try {
    const manifest = require('../package.json') as { version?: string };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export const EDGE_VERSION: string = process.env['IOP_BUILD_VERSION'] ?? packageVersion();
