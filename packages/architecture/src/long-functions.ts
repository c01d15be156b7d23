// Functions longer than a reader can hold: every function, method, accessor, constructor and arrow function in a
// set of TypeScript sources whose body spans more than a number of lines (from its opening to its closing brace),
// read with the TypeScript parser so strings and comments never count as code.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface LongFunction {
  /** Repo-relative path (posix separators) and the 1-based line its body starts on. */
  file: string;
  line: number;
  /** Its name, the variable or property it is assigned to, or `<anonymous>`. */
  name: string;
  lines: number;
}

/** Non-test .ts/.tsx files under `dir` (test-support included: it is source too), declaration files left out. */
export function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') files.push(...sourceFiles(full));
    } else if (/\.tsx?$/.test(entry.name) && !/(\.test\.tsx?|\.d\.ts)$/.test(entry.name)) {
      files.push(full);
    }
  }
  return files.sort();
}

/** The functions in `files` whose body spans more than `maxLines` lines. */
export function findLongFunctions(
  repoRoot: string,
  files: readonly string[],
  maxLines: number,
): LongFunction[] {
  const found: LongFunction[] = [];
  for (const file of files) {
    const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
    const source = ts.createSourceFile(
      file,
      fs.readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
      kind,
    );
    const relative = path.relative(repoRoot, file).split(path.sep).join('/');
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
        const body = node.body as ts.Node;
        const first = source.getLineAndCharacterOfPosition(body.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(body.getEnd()).line;
        const lines = last - first + 1;
        if (lines > maxLines)
          found.push({ file: relative, line: first + 1, name: nameOf(node, source), lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) {
    return parent.name.getText(source);
  }
  return '<anonymous>';
}
