// Entry points that turn edge.yaml text or a file into a ConfigLoadResult: parse (with line numbers), check the
// structure (ajv), normalize and default, check references, then freeze. Every problem found is reported in
// one result, ordered by line; nothing here throws for bad input.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { formatPath, isRecord, type PendingIssue } from './config-path.js';
import { deepFreeze } from './deep-freeze.js';
import { normalizeDocument } from './normalize.js';
import type { ConfigIssue, ConfigLoadResult } from './types.js';
import { validateReferences } from './validate-references.js';
import { validateStructure } from './validate-structure.js';
import { parseYamlSource, type YamlSource } from './yaml-source.js';

export interface ParseConfigOptions {
  /** Directory that relative file paths in the config resolve against; omitted = keep them as written. */
  readonly baseDir?: string;
}

/**
 * Parses and validates edge.yaml text. `sourceName` names the input in document-level messages.
 * Pass `baseDir` (loadConfigFile does) to make data_dir, tls files and artifact_dir absolute.
 */
export function parseConfigText(
  text: string,
  sourceName: string,
  options: ParseConfigOptions = {},
): ConfigLoadResult {
  const parsed = parseYamlSource(text, sourceName);
  if (!parsed.ok) return { ok: false, issues: parsed.issues };
  const { source } = parsed;
  const structural = validateStructure(source);
  if (!isRecord(source.data)) return { ok: false, issues: structural };

  const normalized = normalizeDocument(source.data, { baseDir: options.baseDir });
  const semantic = [...normalized.issues, ...validateReferences(normalized)]
    .map((issue) => locate(issue, source))
    .filter((issue) => !structural.some((known) => covers(known.path, issue.path)));
  const issues = [...structural, ...semantic];
  if (issues.length > 0) return { ok: false, issues: sortByLine(issues) };
  return { ok: true, config: deepFreeze(normalized.config) };
}

/** Reads and validates an edge.yaml file; relative paths inside resolve against the file's directory. */
export async function loadConfigFile(filePath: string): Promise<ConfigLoadResult> {
  const absolute = path.resolve(filePath);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      issues: [
        code === 'ENOENT'
          ? { path: '', code: 'file_not_found', message: `config file not found: ${absolute}` }
          : {
              path: '',
              code: 'file_unreadable',
              message: `cannot read ${absolute}: ${code ?? String(error)}`,
            },
      ],
    };
  }
  return parseConfigText(text, absolute, { baseDir: path.dirname(absolute) });
}

function locate(issue: PendingIssue, source: YamlSource): ConfigIssue {
  return {
    path: formatPath(issue.segments),
    line: source.lineOf(issue.segments, { key: issue.key ?? false }),
    code: issue.code,
    message: issue.message,
  };
}

/** A structural issue at `known` makes semantic findings at or below it noise. */
function covers(known: string, candidate: string): boolean {
  if (known === '') return false;
  return candidate === known || candidate.startsWith(`${known}.`) || candidate.startsWith(`${known}[`);
}

function sortByLine(issues: ConfigIssue[]): ConfigIssue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => (a.issue.line ?? Infinity) - (b.issue.line ?? Infinity) || a.index - b.index)
    .map(({ issue }) => issue);
}
