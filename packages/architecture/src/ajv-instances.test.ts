// Every ajv instance is made by createAjv (packages/config/src/create-ajv.ts), which turns ajv's code optimizer
// off: the optimizer's per-variable-name objects fill V8's transition table of the empty object's map and slow
// the edge's hot path until a full GC (bench/README.md, 2026-12-02 third stop). A `new Ajv(` anywhere else in the
// apps' and packages' sources (tests included) fails here.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';

const REPO = path.resolve(import.meta.dirname, '../../..');
const FACTORY = 'packages/config/src/create-ajv.ts';
const THIS_TEST = 'packages/architecture/src/ajv-instances.test.ts';
const NEW_AJV = /\bnew\s+Ajv\s*\(/;

function sources(dir: string): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') files.push(...sources(full));
    } else if (/\.(ts|tsx|mts|js|mjs|cjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      files.push(full);
    }
  }
  return files;
}

function roots(): string[] {
  const under = (parent: string) =>
    fs
      .readdirSync(path.join(REPO, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(REPO, parent, entry.name))
      .flatMap((dir) =>
        ['src', 'test'].map((sub) => path.join(dir, sub)).filter((sub) => fs.existsSync(sub)),
      );
  return [...under('apps'), ...under('packages')];
}

describe('ajv instances', () => {
  it('finds a construction where one is written (the pattern this test relies on)', () => {
    expect(NEW_AJV.test('const ajv = new Ajv({ strict: true });')).toBe(true);
    expect(NEW_AJV.test('const ajv = createAjv({ strict: true });')).toBe(false);
  });

  it('are made only by createAjv', () => {
    const offenders = roots()
      .flatMap(sources)
      .map((file) => path.relative(REPO, file).split(path.sep).join('/'))
      .filter((file) => file !== FACTORY && file !== THIS_TEST)
      .filter((file) => NEW_AJV.test(fs.readFileSync(path.join(REPO, file), 'utf8')));
    expect(offenders).toEqual([]);
    expect(NEW_AJV.test(fs.readFileSync(path.join(REPO, FACTORY), 'utf8'))).toBe(true);
  });
});
