// Strict, type-aware lint: floating promises and unchecked `any` are errors.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const CLOCK_MESSAGE =
  'Time goes through @iop/clock: take a `clock: Clock` (systemClock at the composition root), use clock.now(), clock.setTimeout() or sleep().';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/.turbo/**',
      '.tools/**',
      '.cache/**',
      'packages/proto/src/gen/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // CLI output code and scripts print to the terminal by design.
    files: [
      'apps/*/src/cli/**/*.ts',
      'apps/*/src/main.ts',
      'bench/**/*.ts',
      'packages/testkit/src/bin/**/*.ts',
    ],
    rules: { 'no-console': 'off' },
  },
  {
    // One clock: every timer and every "now" of the product code goes through @iop/clock (`Clock`, `systemClock`,
    // `sleep`), injected, so tests drive time with a ManualClock. setImmediate is allowed: it schedules work after
    // the current turn and measures no time. performance.now() (durations only) is allowed too.
    files: ['apps/*/src/**/*.ts', 'apps/*/src/**/*.tsx', 'packages/*/src/**/*.ts'],
    ignores: [
      'packages/clock/src/**',
      // Test tooling: fake servers, fixtures and smoke drivers run in real time by design.
      'packages/testkit/src/**',
      '**/*.test.ts',
      '**/*.test.tsx',
      '**/test-support/**',
      'apps/node/src/adapters/cli/smoke/**',
    ],
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: CLOCK_MESSAGE },
        { name: 'setInterval', message: CLOCK_MESSAGE },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: CLOCK_MESSAGE },
        { object: 'globalThis', property: 'setTimeout', message: CLOCK_MESSAGE },
        { object: 'globalThis', property: 'setInterval', message: CLOCK_MESSAGE },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: CLOCK_MESSAGE },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ['timers', 'node:timers', 'timers/promises', 'node:timers/promises'].map((name) => ({
            name,
            message: CLOCK_MESSAGE,
          })),
        },
      ],
    },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
