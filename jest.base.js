// Shared jest setup: ESM TypeScript compiled by swc; workspace packages resolve to their sources so tests
// never depend on stale build output.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));

/** @param {string} packageDir @returns {import('jest').Config} */
export function jestConfig(packageDir, overrides = {}) {
  return {
    rootDir: packageDir,
    testEnvironment: 'node',
    testMatch: ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
    extensionsToTreatAsEsm: ['.ts'],
    transform: {
      '^.+\\.ts$': [
        '@swc/jest',
        {
          jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
          module: { type: 'es6' },
          sourceMaps: 'inline',
        },
      ],
    },
    moduleNameMapper: {
      '^@iop/(proto|wire|config|testkit|logging|cli-kit|clock|errors|tracing|ui-api)$': path.join(
        root,
        'packages/$1/src/index.ts',
      ),
      '^(\\.{1,2}/.*)\\.js$': '$1',
    },
    testTimeout: 20000,
    // Suites close every server and process they start (run with --detectOpenHandles in band: none reported),
    // but a parallel worker was once seen lingering after all suites passed; CI must not hang on that.
    forceExit: true,
    ...overrides,
  };
}
