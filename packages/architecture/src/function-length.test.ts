// No function in apps/*/src longer than 150 lines (issue 45): a newcomer finds a route's or a step's code in a
// named function of its own. Counted by long-functions.ts from a body's opening to its closing brace.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { findLongFunctions, sourceFiles } from './long-functions.js';

const REPO = path.resolve(import.meta.dirname, '../../..');
const MAX_LINES = 150;

function appSources(): string[] {
  const apps = path.join(REPO, 'apps');
  return fs
    .readdirSync(apps)
    .map((app) => path.join(apps, app, 'src'))
    .filter((dir) => fs.existsSync(dir))
    .flatMap((dir) => sourceFiles(dir));
}

describe('function length', () => {
  it(`finds no function over ${MAX_LINES} lines in apps/*/src`, () => {
    const long = findLongFunctions(REPO, appSources(), MAX_LINES);
    const offenders = long.map((entry) => `${entry.file}:${entry.line} ${entry.name} (${entry.lines} lines)`);
    expect(offenders).toEqual([]);
  });

  it('counts a body from its opening to its closing brace, arrow functions and methods included', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-function-length-'));
    try {
      const body = (lines: number): string => new Array<string>(lines - 2).fill('  work();').join('\n');
      const file = path.join(dir, 'sample.ts');
      fs.writeFileSync(
        file,
        [
          `export function fits() {\n${body(MAX_LINES)}\n}`,
          `export const arrow = () => {\n${body(MAX_LINES + 1)}\n};`,
          `export class Holder {\n  method() {\n${body(MAX_LINES + 2)}\n  }\n}`,
        ].join('\n'),
      );
      expect(findLongFunctions(dir, [file], MAX_LINES).map((entry) => [entry.name, entry.lines])).toEqual([
        ['arrow', MAX_LINES + 1],
        ['method', MAX_LINES + 2],
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
