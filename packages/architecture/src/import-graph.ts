// The import graph of one source tree: every module (non-test .ts/.tsx file) and what it imports, read with
// TypeScript's own pre-processor (static imports and re-exports, type-only ones included, side-effect imports and
// dynamic `import()`), so a comment or a string that looks like an import is never counted.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One import of one module. `to` is repo-relative for a relative import, the specifier for a package import. */
export interface ImportEdge {
  from: string;
  to: string;
  kind: 'relative' | 'package';
}

export interface ImportGraph {
  /** Repo-relative paths of the modules read (posix separators). */
  modules: string[];
  edges: ImportEdge[];
}

export interface ReadGraphOptions {
  /** The repository root every path is made relative to. */
  repoRoot: string;
  /** Directories (repo-relative) whose modules are read. */
  roots: string[];
  /** Read tests and `test-support/` folders too (default: the shipped modules only). */
  includeTests?: boolean;
}

const SOURCE = /\.tsx?$/;
const EXEMPT = /(\.test\.tsx?|\.d\.ts)$/;
const DECLARATION = /\.d\.ts$/;

/**
 * Modules under `dir`, generated declaration files left out, and tests and `test-support/` folders unless
 * `includeTests`.
 */
export function listModules(dir: string, includeTests = false): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules' || (entry.name === 'test-support' && !includeTests)) continue;
      files.push(...listModules(full, includeTests));
    } else if (
      SOURCE.test(entry.name) &&
      (includeTests ? !DECLARATION.test(entry.name) : !EXEMPT.test(entry.name))
    ) {
      files.push(full);
    }
  }
  return files.sort();
}

function toPosix(relative: string): string {
  return relative.split(path.sep).join('/');
}

/** The file a relative specifier names: `./x.js` → `x.ts` (or `.tsx`), a directory → its `index.ts`. */
function resolveRelative(fromFile: string, specifier: string): string {
  const base = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.js$/, '.tsx'),
    base,
    `${base}.ts`,
    `${base}.tsx`,
    path.join(base, 'index.ts'),
  ];
  return candidates.find((candidate) => fs.existsSync(candidate) && fs.statSync(candidate).isFile()) ?? base;
}

/** The import graph of every module under `options.roots`. */
export function readImportGraph(options: ReadGraphOptions): ImportGraph {
  const modules: string[] = [];
  const edges: ImportEdge[] = [];
  for (const root of options.roots) {
    for (const file of listModules(path.join(options.repoRoot, root), options.includeTests)) {
      const from = toPosix(path.relative(options.repoRoot, file));
      modules.push(from);
      const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
      for (const { fileName } of info.importedFiles) {
        if (fileName.startsWith('.')) {
          const target = resolveRelative(file, fileName);
          edges.push({ from, to: toPosix(path.relative(options.repoRoot, target)), kind: 'relative' });
        } else {
          edges.push({ from, to: fileName, kind: 'package' });
        }
      }
    }
  }
  return { modules, edges };
}
