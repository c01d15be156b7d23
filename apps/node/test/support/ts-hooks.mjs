// Module hooks that let a child Node process run the TypeScript sources directly (for cross-process tests:
// crash a real process mid-run, run the CLI). Mirrors jest.base.js: `.js` imports resolve to `.ts` sources,
// `@iop/<pkg>` resolves to packages/<pkg>/src/index.ts, and swc strips the types.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import swc from '@swc/core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const workspacePackage = /^@iop\/(proto|wire|config|testkit|clock)$/;

export async function resolve(specifier, context, nextResolve) {
  const match = workspacePackage.exec(specifier);
  if (match) {
    return {
      url: pathToFileURL(path.join(root, 'packages', match[1], 'src/index.ts')).href,
      shortCircuit: true,
    };
  }
  if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const candidate = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
    if (fs.existsSync(fileURLToPath(candidate))) return { url: candidate.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  const { code } = await swc.transform(await fs.promises.readFile(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  });
  return { format: 'module', source: code, shortCircuit: true };
}
