// The type names each module exports (interfaces, classes, type aliases, enums), read with TypeScript's parser, and
// the names that more than one module declares. The architecture guide asks for one name per concept
// (agent-contract/glossary.md): the same exported type name in two modules is two concepts under one name, or
// one concept written twice.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface ModuleNames {
  /** Repo-relative path (posix separators). */
  module: string;
  names: string[];
}

function isExported(statement: ts.Statement): boolean {
  const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
  return modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword) ?? false;
}

/** The type names a module declares and exports itself (re-exports of another module's names are not counted). */
export function exportedTypeNames(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!isExported(statement)) continue;
    if (
      (ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isClassDeclaration(statement)) &&
      statement.name
    ) {
      names.push(statement.name.text);
    }
  }
  return names;
}

/** Reads the exported type names of `files` (absolute paths), relative to `repoRoot`. */
export function readExportedNames(repoRoot: string, files: readonly string[]): ModuleNames[] {
  return files.map((file) => ({
    module: path.relative(repoRoot, file).split(path.sep).join('/'),
    names: exportedTypeNames(file, fs.readFileSync(file, 'utf8')),
  }));
}

/** Each name declared by more than one module, with those modules (sorted), by name. */
export function duplicateNames(modules: readonly ModuleNames[]): Map<string, string[]> {
  const byName = new Map<string, Set<string>>();
  for (const { module, names } of modules) {
    for (const name of names) {
      let declared = byName.get(name);
      if (!declared) byName.set(name, (declared = new Set()));
      declared.add(module);
    }
  }
  const duplicates = new Map<string, string[]>();
  for (const [name, declared] of [...byName].sort(([left], [right]) => left.localeCompare(right))) {
    if (declared.size > 1) duplicates.set(name, [...declared].sort());
  }
  return duplicates;
}
